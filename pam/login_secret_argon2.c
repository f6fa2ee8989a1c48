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
// them when the holder exits, however it exits. Who holds a lock, and so
// whether it is stopped, is read from the kernel (/proc/locks gives the
// holder's pid, /proc/PID/stat its state), never from the holder itself: a
// holder stopped right after it locked, before it could write anything,
// is seen as stopped all the same. A holder that cannot be shown to be
// stopped (not listed, gone) counts as running.
#include "login_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

/// The state letter of `pid` (field 3 of /proc/PID/stat); 0 if there is no such process.
static char process_state(pid_t pid) {
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
    return cursor && cursor[1] == ' ' ? cursor[2] : 0;
}

static void release(int fd) {
    if (fd < 0) return;
    flock(fd, LOCK_UN);
    close(fd);
}

/// The pids holding flocks on the files open as `fds` (0: none listed, or
/// not visible in this pid namespace), from one read of /proc/locks, whose
/// lines read "1: FLOCK  ADVISORY  WRITE PID MAJOR:MINOR:INODE 0 EOF".
static void flock_holders(const int *fds, int count, pid_t *holders) {
    struct stat files[LS_ARGON2_SLOTS + 1];
    for (int i = 0; i < count; i++) {
        holders[i] = 0;
        if (fds[i] < 0 || fstat(fds[i], &files[i]) != 0) files[i].st_ino = 0;
    }
    FILE *locks = fopen("/proc/locks", "re");
    if (!locks) return;
    char line[256], type[16];
    int pid;
    unsigned device_major, device_minor;
    unsigned long inode;
    while (fgets(line, sizeof line, locks)) {
        if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", type, &pid, &device_major, &device_minor, &inode) != 5 ||
            strcmp(type, "FLOCK") != 0 || pid <= 0) continue;
        for (int i = 0; i < count; i++) {
            if (files[i].st_ino != 0 && files[i].st_ino == inode && major(files[i].st_dev) == device_major &&
                minor(files[i].st_dev) == device_minor) holders[i] = (pid_t)pid;
        }
    }
    fclose(locks);
}

/// Whether `pid` is stopped (kill -STOP, or by a tracer).
static int is_stopped(pid_t pid) {
    char state = pid > 0 ? process_state(pid) : 0;
    return state == 'T' || state == 't';
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
    char name[32];
    unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);
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
            result = LS_ARGON2_OK;
            break;
        }
        pid_t holder;
        flock_holders(&lease->user, 1, &holder);
        pid_t stopped = is_stopped(holder) ? holder : 0;
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
    pid_t holders[LS_ARGON2_SLOTS];
    for (;;) {
        int mine = -1, held[LS_ARGON2_SLOTS] = { 0 };
        running = stopped = 0;
        for (int i = 0; i < LS_ARGON2_SLOTS; i++) {
            if (slots[i] < 0) continue;
            if (mine < 0 && flock(slots[i], LOCK_EX | LOCK_NB) == 0) {
                mine = i;
            } else if (flock(slots[i], LOCK_SH | LOCK_NB) == 0) {
                flock(slots[i], LOCK_UN);   // free
            } else {
                held[i] = 1;
            }
        }
        flock_holders(slots, LS_ARGON2_SLOTS, holders);
        for (int i = 0; i < LS_ARGON2_SLOTS; i++) {
            if (!held[i]) continue;
            if (is_stopped(holders[i])) {
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
        if (mine >= 0) flock(slots[mine], LOCK_UN);
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
