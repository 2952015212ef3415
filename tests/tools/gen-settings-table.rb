#!/usr/bin/env ruby
# Prints the settings of the Puppet that runs it (lib/puppet/defaults.rb), one JSON array a line,
# in their definition order: [name, kind, short option, default kind, default, allowed values or
# alias target]. tests/tools/gen-settings-table.py runs it under Puppet 7 and Puppet 8 and writes
# src/engine/settings_table.h from both. Defaults computed by Ruby code (a lambda) are COMPUTED
# (written in C, src/engine/settings.c computed_default).
require 'json'
require 'puppet'

Puppet.initialize_settings

KINDS = {
  'StringSetting' => 'ST_STRING', 'FileSetting' => 'ST_FILE', 'DirectorySetting' => 'ST_DIRECTORY',
  'FileOrDirectorySetting' => 'ST_FILE_OR_DIRECTORY', 'PathSetting' => 'ST_PATH',
  'BooleanSetting' => 'ST_BOOLEAN', 'IntegerSetting' => 'ST_INTEGER', 'PortSetting' => 'ST_PORT',
  'DurationSetting' => 'ST_DURATION', 'TTLSetting' => 'ST_TTL', 'EnumSetting' => 'ST_ENUM',
  'SymbolicEnumSetting' => 'ST_SYMBOLIC_ENUM', 'PrioritySetting' => 'ST_PRIORITY',
  'ArraySetting' => 'ST_ARRAY', 'TerminusSetting' => 'ST_TERMINUS', 'AutosignSetting' => 'ST_AUTOSIGN',
  'CertificateRevocationSetting' => 'ST_CERTIFICATE_REVOCATION', 'ServerListSetting' => 'ST_SERVER_LIST',
  'HttpExtraHeadersSetting' => 'ST_HTTP_EXTRA_HEADERS', 'AliasSetting' => 'ST_ALIAS',
}

puts JSON.generate(['VERSION', Puppet.version])
Puppet.settings.each do |name, s|
  kind = KINDS.fetch(s.class.name.sub('Puppet::Settings::', ''))
  d = s.instance_variable_get(:@default)
  dk, dv = case d
           when Proc then ['DEF_COMPUTED', '']
           when nil then ['DEF_NIL', '']
           when true then ['DEF_TRUE', '']
           when false then ['DEF_FALSE', '']
           when Integer then ['DEF_INTEGER', d.to_s]
           when Symbol then ['DEF_SYMBOL', d.to_s]
           when String then ['DEF_STRING', d]
           when Array
             raise "#{name}: a non-empty array default" unless d.empty?
             ['DEF_EMPTY_ARRAY', '']
           else raise "#{name}: default #{d.inspect}"
           end
  extra = if s.respond_to?(:values) && s.values
            s.values.map(&:to_s)
          elsif kind == 'ST_ALIAS'
            s.alias_name.to_s
          end
  puts JSON.generate([name.to_s, kind, s.short, dk, dv, extra])
end
