plan profile::deploy (TargetSpec $targets = lookup('profile::plans::target')) {
  run_command('uptime', $targets)
}
