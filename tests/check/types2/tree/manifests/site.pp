include gen::basic
include gen::ranges
include gen::collections
include gen::variants
include gen::merged
include gen::interp
include gen::req
