function environment::data() {
  { 'a' => 'from the function' }
}
