# @summary the base profile
class profile::base (
  Array[String[1]] $packages,
  Hash[String, Variant[Integer, String]] $sysctl = {},
  String $motd = 'hello',
  Pattern[/@/] $admin,
) {
  include ntp
  $domain = lookup('site_domain')
  file { '/etc/motd':
    content => @("MOTD"/L),
      ${motd}
      Managed by Puppet: ${lookup('admin_email')}
      | MOTD
  }
}
