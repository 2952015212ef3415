class gen::collections (
  Array[String] $list = [],
  Array[Integer,2] $min2 = [1, 2],
  Hash[String, Integer] $counts = {},
  Tuple[String, Integer] $pair = ['a', 1],
  Struct[{name => String, Optional[port] => Integer}] $svc = {'name' => 'x'},
) {
}
