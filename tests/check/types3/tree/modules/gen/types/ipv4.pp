type Gen::Ipv4 = Pattern[/\A([0-9]+\.){3}[0-9]+\z/]
