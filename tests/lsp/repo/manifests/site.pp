node default {
  include profile::base
  $extra = lookup('profile::base::role_name')
}
