class old4 (Integer $port) {
}
