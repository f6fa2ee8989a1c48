/* app-preflight N: what an app pays for its preflight through liblocalauth-1,
 * in one process: la_context_new(), la_context_can_evaluate_policy(),
 * la_context_get_biometry_type(), N times after 20 unmeasured ones (the first
 * connects). Prints each duration in nanoseconds, one a line; exits 1 if a
 * preflight does not say yes with Touch ID. localauth-bench builds it against
 * .build/clientlib and runs it on its rig. */
#include <localauth.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned long long
nanoseconds (void)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return (unsigned long long) now.tv_sec * 1000000000ULL + (unsigned long long) now.tv_nsec;
}

static void
preflight (void)
{
  g_autoptr (LaContext) context = la_context_new ();
  g_autoptr (GError) error = NULL;
  if (!la_context_can_evaluate_policy (context, LA_POLICY_DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS, &error)
      || la_context_get_biometry_type (context) != LA_BIOMETRY_TYPE_TOUCH_ID)
    {
      fprintf (stderr, "preflight failed: %s\n", error != NULL ? error->message : "not Touch ID");
      exit (1);
    }
}

int
main (int argc, char **argv)
{
  long count = argc == 2 ? strtol (argv[1], NULL, 10) : 0;
  if (count <= 0)
    {
      fprintf (stderr, "usage: app-preflight N\n");
      return 2;
    }
  for (int i = 0; i < 20; i++)
    preflight ();
  unsigned long long *samples = g_new (unsigned long long, count);
  for (long i = 0; i < count; i++)
    {
      unsigned long long start = nanoseconds ();
      preflight ();
      samples[i] = nanoseconds () - start;
    }
  for (long i = 0; i < count; i++)
    printf ("%llu\n", samples[i]);
  g_free (samples);
  return 0;
}
