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

# a lookup key's segments as Puppet splits it: dots outside quotes; quoted segments unquoted
def segments(key)
  segs = []
  cur = +''
  quote = nil
  key.each_char do |c|
    if quote
      c == quote ? quote = nil : cur << c
    elsif c == '"' || c == "'"
      quote = c
    elsif c == '.'
      segs << cur
      cur = +''
    else
      cur << c
    end
  end
  segs << cur
end

def deep_dup(v)
  Marshal.load(Marshal.dump(v))
end

# {"ok"} when now is want, keys in the same order at every depth, else {"ok": false, "why"}
def judge(now, want)
  if now != want
    { 'ok' => false, 'why' => "Ruby reads #{now.inspect[0, 300]}, expected #{want.inspect[0, 300]}" }
  elsif now.inspect != want.inspect
    { 'ok' => false, 'why' => "key order: #{now.inspect[0, 300]} != #{want.inspect[0, 300]}" }
  else
    { 'ok' => true }
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
      out << judge(now, want)
    rescue StandardError, Psych::Exception => e
      out << { 'ok' => false, 'why' => "Ruby cannot load the result: #{e.message}" }
    end
  end
elsif mode == 'edits'
  # JOBS: [{"old", "new", "key", "value" (YAML), "unset", "changed"}]; prints [{"ok", "why"?}]: the
  # new file loads, as the old one with the key's path set to YAML.load(value) (the hashes on the
  # way made) or removed, in the same order
  JSON.parse(File.read(arg)).each do |job|
    begin
      begin
        old = load(File.binread(job['old']).force_encoding('UTF-8'))
      rescue StandardError, Psych::Exception => e
        out << (job['changed'] ? { 'ok' => false, 'why' => "written, but Ruby cannot load the old file: #{e.message}" } : { 'ok' => true })
        next
      end
      now = load(File.binread(job['new']).force_encoding('UTF-8'))
      old = {} if old.nil?
      now = {} if now.nil?
      unless old.is_a?(Hash)
        out << { 'ok' => false, 'why' => "edited a document that is not a hash (#{old.class})" }
        next
      end
      want = deep_dup(old)
      segs = segments(job['key'])
      cur = want
      segs[0..-2].each do |s|
        if job['unset'] # (nothing to remove under a value that is not a hash)
          cur = cur[s].is_a?(Hash) ? cur[s] : {}
          next
        end
        cur[s] = {} unless cur[s].is_a?(Hash)
        cur = cur[s]
      end
      if job['unset']
        cur.delete(segs[-1])
      else
        cur[segs[-1]] = load(job['value'])
      end
      out << judge(now, want)
    rescue StandardError, Psych::Exception => e
      out << { 'ok' => false, 'why' => "Ruby cannot load the result: #{e.message}" }
    end
  end
end
puts JSON.generate(out)
