class web (
  Web::Port $port,
  Array[String] $packages = [],
) {
}
