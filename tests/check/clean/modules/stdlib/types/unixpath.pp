type Stdlib::Unixpath = Pattern[/\A\/([^\n\/\0]+\/*)*\z/]
