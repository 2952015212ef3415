#!/usr/bin/env ruby
# The data files Puppet 7's lookup reads for each node of a facts folder: for triaging
# `hiera check`'s unreached-file and shadowed-key findings against Puppet (tests/check/realrepos/).
#
# usage: puppet-reached.rb FACTS_DIR OUT.json [KEY...] [puppet lookup flags: --codedir D
#        --environmentpath E --hiera_config H --environment ENV]
# For every NAME.json / NAME.yaml of FACTS_DIR, looks up a key no file defines (and
# MODULE::__hiera_check__ for every KEY given as a module name) with Puppet's explainer, and
# records every location that exists ("Path" entries not followed by "Path not found"): what
# the node's hierarchy reads. Writes {"node": ["path", ...]} to OUT.json. Facts are given as
# `puppet lookup --facts` gives them (no --compile: the main manifest is not evaluated).
require 'json'
require 'puppet'
require 'puppet/application/lookup'

class Reached < Puppet::Application::Lookup
  attr_accessor :facts_dir, :out, :modules

  def main
    result = {}
    Dir.children(@facts_dir).sort.each do |f|
      next unless f =~ /\A(.+)\.(json|ya?ml)\z/
      node = Regexp.last_match(1)
      options[:node] = node
      options[:fact_file] = File.join(@facts_dir, f)
      paths = []
      begin
        generate_scope do |scope|
          (['__hiera_check_none__'] + @modules.map { |m| "#{m}::__hiera_check__" }).each do |key|
            explainer = Puppet::Pops::Lookup::Explainer.new(false, false)
            inv = Puppet::Pops::Lookup::Invocation.new(scope, {}, {}, explainer)
            begin
              Puppet::Pops::Lookup.lookup(key, nil, nil, false, nil, inv)
            rescue Puppet::DataBinding::LookupError, Puppet::Error, StandardError
              # not found (or a failure): the explanation holds what was read
            end
            lines = explainer.explain.lines.map(&:strip)
            lines.each_with_index do |l, i|
              next unless l =~ /\APath "(.*)"\z/
              path = Regexp.last_match(1)
              follow = lines[i + 1, 3] || []
              paths << path unless follow.any? { |x| x == 'Path not found' }
            end
          end
        end
      rescue StandardError, Puppet::Error => e
        result[node] = { 'error' => e.message }
        next
      end
      result[node] = paths.uniq
    end
    File.write(@out, JSON.pretty_generate(result))
    exit(0)
  end
end

facts_dir = ARGV.shift
out = ARGV.shift
modules = []
modules << ARGV.shift while ARGV.first && !ARGV.first.start_with?('-')
args = ARGV + ['unused']
Puppet.initialize_settings(args, true)
app = Reached.new(Puppet::Util::CommandLine.new('lookup', args))
app.facts_dir = facts_dir
app.out = out
app.modules = modules
app.run
