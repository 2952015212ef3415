node default {
  $role = $facts['role']
  include "role::${role}"
  lookup('classes', Array[String], 'unique', []).include
}
