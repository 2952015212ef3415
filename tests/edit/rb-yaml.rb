# rb-yaml.rb - Ruby's view of YAML files, for tests/edit/realrepo.py (the reference: Ruby's Psych,
# as Puppet reads data files: YAML.load with aliases and Symbol permitted).
#
#   ruby rb-yaml.rb describe LIST.json   LIST: [path...]; prints [{"file", "hash": bool, "error"?,
#                                        "keys": [{"key", "json"?: the value when JSON holds it
#                                        exactly, "line", "next"}]}] (lines 1-based; next: the line
#                                        of the next top-level key, or 1 + the last line)
#   ruby rb-yaml.rb verify JOBS.json     JOBS: [{"old", "new", "key", "action": "set"|"unset",
#                                        "value"?}]; prints [{"ok", "why"?}]: the new file loads
#                                        as the old one with the key set (in place) or removed
require 'yaml'
require 'json'

def load(text)
  YAML.load(text, aliases: true, permitted_classes: [Symbol])
end

def json_exact(v)
  JSON.parse(JSON.generate([v]))[0] == v && !deep_has_symbol(v) ? JSON.parse(JSON.generate([v]))[0] : :none
rescue StandardError
  :none
end

def deep_has_symbol(v)
  case v
  when Symbol then true
  when Array then v.any? { |x| deep_has_symbol(x) }
  when Hash then v.any? { |k, x| !k.is_a?(String) || deep_has_symbol(x) }
  when Float then v.nan? || v.infinite?
  else false
  end
end

mode, arg = ARGV
out = []
if mode == 'describe'
  JSON.parse(File.read(arg)).each do |path|
    r = { 'file' => path }
    begin
      text = File.binread(path).force_encoding('UTF-8')
      doc = load(text)
      doc = {} if doc.nil? # (an empty document, comments only: Puppet reads no keys, an edit adds some)
      if doc.is_a?(Hash)
        ast = Psych.parse(text)
        nodes = (ast && ast.root && ast.root.children) || [] # (an empty document: a null scalar, no children)
        lines = text.count("\n") + (text.end_with?("\n") || text.empty? ? 1 : 2)
        keys = []
        (0...nodes.length).step(2) do |i|
          k = nodes[i]
          next unless k.is_a?(Psych::Nodes::Scalar)
          nxt = i + 2 < nodes.length ? nodes[i + 2].start_line + 1 : lines
          keys << { 'key' => k.value, 'line' => k.start_line + 1, 'next' => nxt, 'plain' => k.plain }
        end
        # the loaded value of each key (duplicates: the last; merge keys: skipped)
        keys.each do |k|
          next unless doc.key?(k['key'])
          j = json_exact(doc[k['key']])
          k['json'] = j unless j == :none
        end
        r['keys'] = keys
      end
      # (said last: a file whose keys could not be described has an "error" and no "hash")
      r['hash'] = doc.is_a?(Hash)
    rescue StandardError, Psych::Exception => e
      r['error'] = e.message
    end
    out << r
  end
elsif mode == 'verify'
  JSON.parse(File.read(arg)).each do |job|
    begin
      old = load(File.binread(job['old']).force_encoding('UTF-8'))
      now = load(File.binread(job['new']).force_encoding('UTF-8'))
      old = {} if old.nil?
      now = {} if now.nil?
      want = old.dup
      if job['action'] == 'set'
        want[job['key']] = job['value']
      else
        want.delete(job['key'])
      end
      if now != want
        out << { 'ok' => false, 'why' => "Ruby reads #{now.inspect[0, 300]}, expected #{want.inspect[0, 300]}" }
      elsif now.keys != want.keys
        out << { 'ok' => false, 'why' => "key order #{now.keys.inspect[0, 300]} != #{want.keys.inspect[0, 300]}" }
      else
        out << { 'ok' => true }
      end
    rescue StandardError, Psych::Exception => e
      out << { 'ok' => false, 'why' => "Ruby cannot load the result: #{e.message}" }
    end
  end
end
puts JSON.generate(out)
