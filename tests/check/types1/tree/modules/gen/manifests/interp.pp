class gen::interp (
  Integer $port_from_fact = 80,
  String[6] $greeting = 'hello!',
  Gen::Mode $copy = '0644',
  Enum['web-x','db-x'] $looked = 'web-x',
) {
}
