class gen {
}
