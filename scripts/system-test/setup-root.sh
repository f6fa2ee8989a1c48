#!/bin/sh
# Run once inside the new root (chroot) by build-root.sh, after mmdebstrap
# installed the packages: the accounts, keys and settings every scenario
# assumes. Part of the root's cache key: editing it builds a new root.
set -eu

# People: alice and bob (desktop users, sudoers), a greeter account as gdm's.
for person in alice:1001 bob:1002; do
    name=${person%%:*}; uid=${person##*:}
    useradd --create-home --uid "$uid" --shell /bin/bash --groups sudo "$name"
    echo "$name:$name-password" | chpasswd
done
useradd --system --uid 120 --home-dir /var/lib/gdm3 --create-home --shell /usr/sbin/nologin Debian-gdm

# SSH: key login for alice (root holds the client key), password login allowed.
mkdir -p /root/.ssh /home/alice/.ssh
ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_alice
install -m 0600 -o alice -g alice /root/.ssh/id_alice.pub /home/alice/.ssh/authorized_keys
chown alice:alice /home/alice/.ssh; chmod 0700 /home/alice/.ssh
cat > /etc/ssh/sshd_config.d/system-test.conf <<'CONF'
ListenAddress 127.0.0.1
PasswordAuthentication yes
KbdInteractiveAuthentication yes
UsePAM yes
LogLevel VERBOSE
CONF
printf 'Host localhost 127.0.0.1\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' > /root/.ssh/config

# A display manager's PAM service (as gdm-launch-environment / gdm-password
# open their sessions): pam_systemd registers the session with logind, its
# class, type and seat taken from XDG_SESSION_CLASS, XDG_SESSION_TYPE, XDG_SEAT.
cat > /etc/pam.d/systest-display <<'CONF'
auth     required pam_permit.so
account  required pam_permit.so
session  required pam_loginuid.so
session  required pam_systemd.so
CONF

# Quiet, quick boots: nothing the scenarios do not need.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
            systemd-tmpfiles-clean.timer man-db.timer dpkg-db-backup.timer; do
    ln -sf /dev/null "/etc/systemd/system/$unit"
done
echo localauth-systest > /etc/hostname
