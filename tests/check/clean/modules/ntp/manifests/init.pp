class ntp (
  Array[Stdlib::Host] $servers = [],
  Boolean $iburst = false,
) {
}
