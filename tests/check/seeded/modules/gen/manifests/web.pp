# a class with typed parameters
class gen::web (
  Integer $port = 80,
  Gen::Count $count = 1,
  String $needed,
) {
}
