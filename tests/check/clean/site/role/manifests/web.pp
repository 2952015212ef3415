class role::web (Integer[1] $workers = 4) {
  include profile::base
  include profile::web
}
