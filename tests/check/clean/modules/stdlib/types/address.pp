type Stdlib::IP::Address = Pattern[/\A[0-9.:a-f]+\z/]
