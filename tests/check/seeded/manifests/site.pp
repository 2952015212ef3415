include gen::web
$values = [lookup('banner'), lookup('mode'), lookup('colour'), lookup('duration'), lookup('release'),
  lookup('empty'), lookup('dup'), lookup('tabbed'), lookup('greeting'), lookup('broken_call'),
  lookup('unknown_fn'), lookup('aliased'), lookup('missing_ref'), lookup('loop1'), lookup('plain_secret'),
  lookup('notahash_opts'), lookup('unknown_opt'), lookup('bad_merge'), lookup('bad_convert'),
  lookup('secret_ok'), lookup('secret_bad'), lookup('secret_malformed'), lookup('node_only'),
  lookup('os_name')]
