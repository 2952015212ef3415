type Gen::Count = Integer[0]
