class gen::merged (
  Array[String] $users = [],
  Hash[String, Hash[String, Integer]] $settings = {},
  Integer $converted = 0,
  Sensitive[String] $secret,
) {
}
