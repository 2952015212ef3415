class role::db {
  contain profile::base
  class { 'profile::db': }
}
