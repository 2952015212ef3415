type Gen::Port = Integer[1, 65535]
