class profile::db (
  Stdlib::Port $port = 5432,
  Sensitive[String] $password,
  Optional[String] $replication_password = undef,
) {
}
