class profile::web (
  Hash[String, Struct[{port => Integer[1, 65535], docroot => Stdlib::Unixpath}]] $vhosts = {},
) {
  $vhosts.each |$name, $v| {
    notify { "vhost ${name} on ${v['port']}": }
  }
}
