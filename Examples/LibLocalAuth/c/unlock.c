/* SPDX-License-Identifier: MIT
 *
 * Unlock with your fingerprint, from C (liblocalauth-1).
 *
 *   unlock --preflight     only the preflight
 *   unlock ID SECRET       preflight, evaluate, a cancelled evaluation, then
 *                          SECRET kept as right ID, loaded after the
 *                          fingerprint, and removed
 *
 * cc -Wall -Werror -o unlock unlock.c $(pkg-config --cflags --libs liblocalauth-1)
 * Every step prints one line (the same lines as the Python, GJS and Vala examples). */
#include <localauth.h>
#include <stdio.h>
#include <string.h>

static GMainLoop *loop;
static GAsyncResult *answer;

static void
say (const char *format, ...) G_GNUC_PRINTF (1, 2);

static void
say (const char *format, ...)
{
  va_list arguments;
  va_start (arguments, format);
  vprintf (format, arguments);
  va_end (arguments);
  putchar ('\n');
  fflush (stdout);
}

static void
failure (const char *step, GError *error)
{
  g_autofree gchar *name = la_error_get_dbus_error_name (error);
  say ("%s: error %d %s", step, error->code, name ? name : "-");
  g_error_free (error);
}

/* Each async call ends here; the main loop runs until it does. */
static void
answered (GObject *source, GAsyncResult *result, gpointer user_data)
{
  answer = g_object_ref (result);
  g_main_loop_quit (loop);
}

static GAsyncResult *
wait_for_answer (void)
{
  g_main_loop_run (loop);
  GAsyncResult *result = answer;
  answer = NULL;
  return result;
}

static void
on_status (LaContext *context, const gchar *status, gpointer cancellable)
{
  say ("status: %s", status);
  if (cancellable != NULL)
    g_cancellable_cancel (cancellable); /* the service answers with AppCancel */
}

static void
evaluate (LaContext *context, const char *step, const char *reason, gboolean cancel_on_first_status)
{
  g_autoptr (GCancellable) cancellable = g_cancellable_new ();
  gulong handler = g_signal_connect (context, "status", G_CALLBACK (on_status),
                                     cancel_on_first_status ? cancellable : NULL);
  la_context_evaluate_policy (context, LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS, reason, cancellable,
                              answered, NULL);
  g_autoptr (GAsyncResult) result = wait_for_answer ();
  g_signal_handler_disconnect (context, handler);
  GError *error = NULL;
  if (la_context_evaluate_policy_finish (context, result, &error))
    say ("%s: success", step);
  else
    failure (step, error);
}

static void
on_right_status (LaRight *right, const gchar *status, gpointer user_data)
{
  say ("status: %s", status);
}

static void
keep_and_load (const char *identifier, const char *secret)
{
  LaRightStore *store = la_right_store_get_default ();
  GError *error = NULL;
  g_autoptr (LaRight) plain = la_right_new (LA_RIGHT_REQUIREMENT_BIOMETRY);
  g_autoptr (GBytes) bytes = g_bytes_new (secret, strlen (secret));
  la_right_store_save_right (store, plain, identifier, bytes, NULL, answered, NULL);
  g_autoptr (GAsyncResult) saved_result = wait_for_answer ();
  g_autoptr (LaRight) saved = la_right_store_save_right_finish (store, saved_result, &error);
  if (saved == NULL)
    return failure ("store", error);
  say ("store: ok");

  la_right_store_right_for_identifier (store, identifier, NULL, answered, NULL);
  g_autoptr (GAsyncResult) found = wait_for_answer ();
  g_autoptr (LaRight) right = la_right_store_right_for_identifier_finish (store, found, &error);
  if (right == NULL)
    return failure ("load", error);
  g_signal_connect (right, "status", G_CALLBACK (on_right_status), NULL);
  la_right_authorize (right, "Open the example's secret", NULL, answered, NULL);
  g_autoptr (GAsyncResult) authorized = wait_for_answer ();
  if (!la_right_authorize_finish (right, authorized, &error))
    failure ("load", error);
  else
    {
      la_secret_load_data (la_right_get_secret (right), NULL, answered, NULL);
      g_autoptr (GAsyncResult) loaded = wait_for_answer ();
      g_autoptr (GBytes) data = la_secret_load_data_finish (la_right_get_secret (right), loaded, &error);
      if (data == NULL)
        failure ("load", error);
      else
        {
          gsize size = 0;
          const char *text = g_bytes_get_data (data, &size);
          say ("load: %.*s", (int) size, text);
        }
    }
  la_right_deauthorize (right);

  la_right_store_remove_right_for_identifier (store, identifier, NULL, answered, NULL);
  g_autoptr (GAsyncResult) removed = wait_for_answer ();
  if (la_right_store_remove_right_for_identifier_finish (store, removed, &error))
    say ("remove: ok");
  else
    failure ("remove", error);
}

int
main (int argc, char **argv)
{
  loop = g_main_loop_new (NULL, FALSE);
  g_autoptr (LaContext) context = la_context_new ();
  GError *error = NULL;
  if (!la_context_can_evaluate_policy (context, LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS, &error))
    {
      failure ("preflight", error);
      return 1;
    }
  say ("preflight: ok biometry-type=%d", la_context_get_biometry_type (context));
  if (argc == 2 && strcmp (argv[1], "--preflight") == 0)
    return 0;
  if (argc != 3)
    {
      fprintf (stderr, "usage: unlock --preflight | unlock ID SECRET\n");
      return 2;
    }
  GBytes *state = la_context_get_evaluated_policy_domain_state (context);
  say ("domain-state: %zu bytes", state ? g_bytes_get_size (state) : 0);
  evaluate (context, "evaluate", "Unlock the example", FALSE);
  evaluate (context, "cancel", "Unlock, then cancel", TRUE);
  keep_and_load (argv[1], argv[2]);
  g_main_loop_unref (loop);
  return 0;
}
