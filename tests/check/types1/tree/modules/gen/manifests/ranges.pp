class gen::ranges (
  Integer[1,65535] $port = 80,
  Gen::Port $alias_port = 80,
  Numeric $num = 1,
  Enum['a','b','c'] $letter = 'a',
  Pattern[/^[a-z]+$/] $word = 'abc',
  Gen::Mode $mode = '0644',
) {
}
