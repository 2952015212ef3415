# the base profile
class profile::base (
  Array[String] $ntp_servers,
  Hash $users = {},
  String $motd = 'hello',
  String $role_name = 'none',
  Integer $port = 22,
) {
  $admins = lookup('profile::base::admins', Array[String], 'unique', [])
}
