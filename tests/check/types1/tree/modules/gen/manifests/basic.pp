class gen::basic (
  Integer $port = 80,
  String $title_text,
  Boolean $enabled = true,
  Float $ratio = 1.0,
  Optional[String] $opt = undef,
  String[3,8] $short = 'abc',
) {
}
