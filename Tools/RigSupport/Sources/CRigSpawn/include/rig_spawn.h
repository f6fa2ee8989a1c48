// What Spawn.swift needs of glibc's posix_spawn that Swift's Glibc module
// does not show: glibc declares these only under _GNU_SOURCE.
#ifndef RIG_SPAWN_H
#define RIG_SPAWN_H
#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+): the child closes
/// every descriptor from `from` up, after the actions before this one.
int rig_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from);
#endif
