class gen::broken {
  $x = "unterminated
}
