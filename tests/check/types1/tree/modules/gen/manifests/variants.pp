class gen::variants (
  Variant[String, Array[String]] $servers = 'a',
  Optional[Integer] $maybe = undef,
  NotUndef $required = 1,
  Any $anything = undef,
  Variant[Gen::Ipv4, Enum['auto']] $ipish = 'auto',
) {
}
