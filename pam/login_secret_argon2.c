// Who may run an Argon2id derivation in a PAM host, and when (docs/KEYRING.md,
// "Where Argon2id runs"). A derivation holds, for its duration:
//
//   - the lock of the account whose password it is (user-UID): one
//     derivation per account at a time, so one account's processes hold at
//     most one slot, and an account's lock is held only by a process working
//     with that account's password (its own passwd, its login, su to it);
//   - one of LS_ARGON2_SLOTS slots (slot-N), taken only while fewer than
//     LS_ARGON2_RUNNING other holders are running. A holder that is stopped
//     (kill -STOP: passwd keeps its invoker's real uid; a debugger) does not
//     count, so nobody makes another account's login or passwd wait by
//     stopping their own; the slots bound the memory such holders keep.
//
// Both are flock(2)s on files in LS_ARGON2_DIR (root 0700): the kernel drops
// them when the holder exits, however it exits. A holder writes its pid and
// start time into the file it locked (and empties it before unlocking), so
// others can tell that it is stopped; a holder that cannot be shown to be
// stopped (not written yet, gone, another start time) counts as running.
#include "login_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/// 20 to 40 ms, different per process, so that two waiters do not keep meeting.
static void pause_briefly(unsigned *seed) {
    struct timespec pause = { 0, (20 + (long)(rand_r(seed) % 21)) * 1000 * 1000 };
    nanosleep(&pause, NULL);
}

/// The state letter and start time (clock ticks after boot) of `pid`, from
/// /proc/PID/stat; 0 if there is no such process.
static int process_state(pid_t pid, char *state, unsigned long long *start) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t length = read(fd, text, sizeof text - 1);
    close(fd);
    if (length <= 0) return 0;
    text[length] = '\0';
    // The name (field 2) may hold anything, ')' included: the fields start after the last ')'.
    char *cursor = strrchr(text, ')');
    if (!cursor || cursor[1] != ' ' || cursor[2] == '\0') return 0;
    cursor += 2;
    *state = *cursor;
    for (int field = 3; field < 22; field++) {   // to field 22, starttime
        cursor = strchr(cursor, ' ');
        if (!cursor) return 0;
        cursor++;
    }
    char *end = NULL;
    *start = strtoull(cursor, &end, 10);
    return end != cursor;
}

/// Writes this process into a file it has just locked.
static void record_holder(int fd, const char *self) {
    if (ftruncate(fd, 0) == 0 && pwrite(fd, self, strlen(self), 0) < 0) {
        // Unwritten, the holder counts as running: never wrongly as stopped.
    }
}

static void release(int fd) {
    if (fd < 0) return;
    if (ftruncate(fd, 0) != 0) {
        // An old record names a process that no longer holds it: counted as running at worst.
    }
    flock(fd, LOCK_UN);
    close(fd);
}

/// The pid in a locked file whose holder is stopped, else 0.
static pid_t stopped_holder(int fd) {
    char text[64];
    ssize_t length = pread(fd, text, sizeof text - 1, 0);
    if (length <= 0) return 0;
    text[length] = '\0';
    int pid = 0;
    unsigned long long recorded = 0, start = 0;
    char state = '?';
    if (sscanf(text, "%d %llu", &pid, &recorded) != 2 || pid <= 0) return 0;
    if (!process_state((pid_t)pid, &state, &start) || start != recorded) return 0;
    return state == 'T' || state == 't' ? (pid_t)pid : 0;
}

/// LS_ARGON2_DIR, made root 0700 if missing; a symlink or another owner is refused.
static int open_directory(void) {
    if (mkdir(LS_ARGON2_DIR, 0700) != 0 && errno != EEXIST) return -1;
    int fd = open(LS_ARGON2_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat info;
    if (fd < 0) return -1;
    if (fstat(fd, &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != 0 || ((info.st_mode & 077) != 0 && fchmod(fd, 0700) != 0)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

static int open_lock(int directory, const char *name) {
    return openat(directory, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int ls_argon2_enter(uid_t uid, LSArgon2Lease *lease, char *why, size_t size) {
    lease->user = lease->slot = -1;
    char self[64], name[32];
    char state;
    unsigned long long start;
    if (!process_state(getpid(), &state, &start)) start = 0;
    snprintf(self, sizeof self, "%d %llu\n", (int)getpid(), start);
    unsigned seed = (unsigned)getpid() ^ (unsigned)start;
    double deadline = now_seconds() + LS_LOCK_SECONDS;

    int directory = open_directory();
    if (directory < 0) {
        snprintf(why, size, "%s cannot be used: %s", LS_ARGON2_DIR, strerror(errno));
        return LS_ARGON2_ERROR;
    }
    snprintf(name, sizeof name, "user-%u", (unsigned)uid);
    lease->user = open_lock(directory, name);
    int result = lease->user < 0 ? LS_ARGON2_ERROR : LS_ARGON2_BUSY;
    if (result == LS_ARGON2_ERROR) snprintf(why, size, "%s/%s cannot be opened: %s", LS_ARGON2_DIR, name, strerror(errno));
    while (result == LS_ARGON2_BUSY) {
        if (flock(lease->user, LOCK_EX | LOCK_NB) == 0) {
            record_holder(lease->user, self);
            result = LS_ARGON2_OK;
            break;
        }
        pid_t stopped = stopped_holder(lease->user);
        if (stopped) {
            snprintf(why, size, "a stopped process (pid %d) holds this account's derivation", (int)stopped);
            result = LS_ARGON2_STOPPED;
        } else if (now_seconds() >= deadline) {
            snprintf(why, size, "this account's previous derivation still ran after %d s", LS_LOCK_SECONDS);
        } else {
            pause_briefly(&seed);
            continue;
        }
        break;
    }
    if (result != LS_ARGON2_OK) {
        if (lease->user >= 0) close(lease->user);
        lease->user = -1;
        close(directory);
        return result;
    }

    int slots[LS_ARGON2_SLOTS];
    for (int i = 0; i < LS_ARGON2_SLOTS; i++) {
        snprintf(name, sizeof name, "slot-%d", i);
        slots[i] = open_lock(directory, name);
    }
    close(directory);
    int opened = 0;
    for (int i = 0; i < LS_ARGON2_SLOTS; i++) opened += slots[i] >= 0;
    if (opened == 0) {
        snprintf(why, size, "no slot of %s can be opened", LS_ARGON2_DIR);
        release(lease->user);
        lease->user = -1;
        return LS_ARGON2_ERROR;
    }
    int running = 0, stopped = 0;
    for (;;) {
        int mine = -1;
        running = stopped = 0;
        for (int i = 0; i < LS_ARGON2_SLOTS; i++) {
            if (slots[i] < 0) continue;
            if (mine < 0 && flock(slots[i], LOCK_EX | LOCK_NB) == 0) {
                mine = i;
                record_holder(slots[i], self);
            } else if (flock(slots[i], LOCK_SH | LOCK_NB) == 0) {
                flock(slots[i], LOCK_UN);   // free
            } else if (stopped_holder(slots[i])) {
                stopped++;
            } else {
                running++;
            }
        }
        if (mine >= 0 && running < LS_ARGON2_RUNNING) {
            lease->slot = slots[mine];
            slots[mine] = -1;
            result = LS_ARGON2_OK;
            break;
        }
        if (mine >= 0) {
            if (ftruncate(slots[mine], 0) != 0) {
                // counted as running by a waiter reading it meanwhile, at worst
            }
            flock(slots[mine], LOCK_UN);
        }
        if (now_seconds() >= deadline) {
            snprintf(why, size, "no Argon2id slot within %d s (%d running, %d stopped holders)", LS_LOCK_SECONDS, running, stopped);
            result = LS_ARGON2_BUSY;
            break;
        }
        pause_briefly(&seed);
    }
    for (int i = 0; i < LS_ARGON2_SLOTS; i++) {
        if (slots[i] >= 0) close(slots[i]);
    }
    if (result != LS_ARGON2_OK) {
        release(lease->user);
        lease->user = -1;
    }
    return result;
}

void ls_argon2_leave(LSArgon2Lease *lease) {
    release(lease->slot);
    release(lease->user);
    lease->slot = lease->user = -1;
}
