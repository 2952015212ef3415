class gen::req (
  String $needed,
  Optional[String] $opt_needed,
  $untyped,
) {
}
