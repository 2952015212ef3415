#!/usr/bin/env ruby
# Asks Puppet 7's own lookup (the reference) the questions of one case, in one process, and
# prints one JSON answer per query. Used by record-cases.py; needs `apt-get install puppet`.
#
# usage: puppet-record.rb QUERIES.json <puppet lookup flags: --codedir --environmentpath
#        --hiera_config --environment --node --facts --vardir ..., any Puppet setting (--confdir...)>
# A query: {"key": K or [K...], "merge": M, "default": D, "type": T, "explain": bool,
#           "explain_options": bool, "render": "json"|"yaml"|"s"}.
# An answer: {"value": V} | {"not_found": true} | {"lookup_error": true, "message": M}
#          | {"error": true, "message": M} | {"output": TEXT, "status": N} (explain, yaml, s).
# Each query gets a fresh compiler (as a separate `puppet lookup` run would), so caches such as
# lookup_options are not shared between queries.
# Ruby's own json, as the puppet package alone runs it: a newer json gem that Debian's ruby-json
# installs (the hiera package brings it into Debian 13) would word JSON syntax errors otherwise
# (json 2.9 cuts the quoted text at 32 bytes), and hiera answers as Puppet 8.10 with Ruby 3.3's json 2.7
begin
  own = Gem::Specification.find_all_by_name('json').find(&:default_gem?)
  gem 'json', own.version.to_s if own
rescue Gem::LoadError
end
require 'json'
require 'puppet'
require 'puppet/application/lookup'

class PuppetRecord < Puppet::Application::Lookup
  attr_accessor :queries

  def main
    answers = queries.map do |q|
      result = nil
      begin
        generate_scope { |scope| result = answer(scope, q) }
      rescue StandardError, Puppet::Error => e
        # setting up the node failed (its facts: no cached facts, a file Puppet refuses...; its
        # scope: a config_version that fails, a setting that does not convert)
        result = { 'error' => true, 'message' => e.message }
      end
      result
    end
    puts JSON.generate(answers)
    exit(0)
  end

  # the merge options exactly as `puppet lookup --merge ...` builds them
  def merge_options(m)
    return nil if m.nil?
    m = { 'strategy' => m } if m.is_a?(String)
    if m['strategy'] == 'deep'
      o = { 'strategy' => 'deep', 'sort_merged_arrays' => !!m['sort_merged_arrays'],
            'merge_hash_arrays' => !!m['merge_hash_arrays'] }
      o['knockout_prefix'] = m['knockout_prefix'] if m['knockout_prefix']
      o
    else
      { 'strategy' => m['strategy'] }
    end
  end

  def answer(scope, q)
    explain = q['explain'] || q['explain_options']
    explainer = explain ? Puppet::Pops::Lookup::Explainer.new(!!q['explain_options'], q['explain_options'] && !q['explain']) : nil
    inv = Puppet::Pops::Lookup::Invocation.new(scope, {}, {}, explainer)
    keys = q['key'].is_a?(Array) ? q['key'] : [q['key']]
    format = q['render'] || (explain ? 's' : 'json')
    renderer = Puppet::Network::FormatHandler.format(format.to_sym)
    begin
      type = q['type'] ? Puppet::Pops::Types::TypeParser.singleton.parse(q['type'], scope) : nil
      value = Puppet::Pops::Lookup.lookup(keys, type, q['default'], q.key?('default'), merge_options(q['merge']), inv)
      unless explain
        return { 'value' => JSON.parse(renderer.render(value), quirks_mode: true) } if format == 'json'
        text = renderer.render(value)
        text += "\n" unless text.end_with?("\n")
        return { 'output' => text, 'status' => 0 }
      end
    rescue Puppet::DataBinding::LookupError => e
      inv.report_text { e.message }
      unless explain
        return { 'not_found' => true } if e.message.include?('did not find a value')
        return { 'lookup_error' => true, 'message' => e.message }
      end
    rescue StandardError, Puppet::Error => e
      return { 'error' => true, 'message' => e.message }
    end
    text = format == 's' ? inv.explainer.explain : renderer.render(inv.explainer.to_hash)
    text += "\n" unless text.end_with?("\n")
    { 'output' => text, 'status' => 0 }
  end
end

qfile = ARGV.shift
args = ARGV + ['--render-as', 'json', 'unused']
Puppet.initialize_settings(args, true)
# `puppet lookup` loads its application after the settings, and its `run_mode :server` then makes
# Puppet a server (facts from the server's yamldir, $vardir/yaml); initialize_settings has just
# reset the mode that loading the class above set
Puppet.settings.preferred_run_mode = :server
app = PuppetRecord.new(Puppet::Util::CommandLine.new('lookup', args))
app.queries = JSON.parse(File.read(qfile))
app.run
