/* SPDX-License-Identifier: MIT */
/* A password manager's quick unlock from C, with the blocking calls an app
 * of KeePassXC's shape makes (its QuickUnlockInterface is synchronous):
 * the call runs in a worker thread while the main loop shows the status.
 *
 *   cc quick-unlock.c $(pkg-config --cflags --libs liblocalauth-1)
 *   ./a.out set|get|has|forget DATABASE, or ./a.out reset
 *
 * The same commands and lines as quick-unlock.py (docs/APPS.md). */
#include <localauth.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const gchar *command;
  const gchar *database;
  LaQuickUnlock *quick;
  GMainLoop *loop;
  int status;
} Call;

static void
say_error (const gchar *step, GError *error)
{
  g_autofree gchar *name = la_error_get_dbus_error_name (error);
  printf ("%s: error %d %s\n", step, error->code, name ? name : "-");
  fflush (stdout);
}

static gchar *
digest (GBytes *key)
{
  gchar *hex = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, key);
  hex[16] = '\0';
  return hex;
}

static void
on_status (LaQuickUnlock *quick, const gchar *status, gpointer data)
{
  printf ("status: %s\n", status);
  fflush (stdout);
}

static gboolean
quit (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

/* The worker: what KeePassXC's setKey / getKey / hasKey / reset would run. */
static gpointer
run (gpointer data)
{
  Call *call = data;
  g_autoptr (GError) error = NULL;
  gboolean ok = FALSE;
  if (g_strcmp0 (call->command, "set") == 0)
    {
      guint8 random[32];
      /* GLib's PRNG is not for keys: the kernel's. */
      ok = getentropy (random, sizeof random) == 0;
      g_autoptr (GBytes) key = g_bytes_new (random, sizeof random);
      explicit_bzero (random, sizeof random);
      if (ok && (ok = la_quick_unlock_set_key_sync (call->quick, call->database, key, NULL, &error)))
        {
          g_autofree gchar *hex = digest (key);
          printf ("set: ok sha256=%s\n", hex);
        }
    }
  else if (g_strcmp0 (call->command, "get") == 0)
    {
      g_autofree gchar *reason = g_strdup_printf ("Unlock %s", call->database);
      g_autoptr (GBytes) key = la_quick_unlock_get_key_sync (call->quick, call->database, reason, NULL, &error);
      if ((ok = key != NULL))
        {
          g_autofree gchar *hex = digest (key);
          printf ("get: ok sha256=%s\n", hex);
        }
    }
  else if (g_strcmp0 (call->command, "has") == 0)
    {
      gboolean has = la_quick_unlock_has_key (call->quick, call->database, &error);
      if ((ok = error == NULL))
        printf ("has: %s\n", has ? "yes" : "no");
    }
  else if (g_strcmp0 (call->command, "forget") == 0)
    {
      if ((ok = la_quick_unlock_reset_key_sync (call->quick, call->database, NULL, &error)))
        printf ("forget: ok\n");
    }
  else if ((ok = la_quick_unlock_reset_sync (call->quick, NULL, &error)))
    printf ("reset: ok\n");
  if (error != NULL)
    say_error (call->command, error);
  fflush (stdout);
  call->status = ok ? 0 : 1;
  /* Quit from the loop's own context: the loop may not run yet. */
  g_idle_add (quit, call->loop);
  return NULL;
}

int
main (int argc, char **argv)
{
  gboolean with_database = argc == 3 && strcmp (argv[1], "reset") != 0;
  if (!with_database && !(argc == 2 && strcmp (argv[1], "reset") == 0))
    {
      fprintf (stderr, "usage: %s set|get|has|forget DATABASE, or %s reset\n", argv[0], argv[0]);
      return 2;
    }
  Call call = { argv[1], with_database ? argv[2] : NULL, la_quick_unlock_new (), g_main_loop_new (NULL, FALSE), 1 };
  /* Status signals come to the global default main context (the worker
   * pushes none of its own before its first call): this thread runs it
   * while the worker waits. */
  g_signal_connect (call.quick, "status", G_CALLBACK (on_status), NULL);
  GThread *worker = g_thread_new ("quick-unlock", run, &call);
  g_main_loop_run (call.loop);
  g_thread_join (worker);
  g_main_loop_unref (call.loop);
  g_object_unref (call.quick);
  return call.status;
}
