# An older copy of the ntp module kept under another folder name: Puppet's autoloader reads
# class ntp from modules/ntp/manifests/init.pp (the module named ntp), never from here, so the
# keys of ntp's parameters are checked against modules/ntp's class, not this one.
class ntp (
  String $server_list = '',
) {
}
