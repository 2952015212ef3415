type Stdlib::Host = Variant[Stdlib::Fqdn, Stdlib::IP::Address]
