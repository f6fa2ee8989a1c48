/* SPDX-License-Identifier: MIT
 *
 * Unlock with your fingerprint, from Vala (liblocalauth-1's .vapi).
 *
 *   unlock --preflight     only the preflight
 *   unlock ID SECRET       preflight, evaluate, a cancelled evaluation, then
 *                          SECRET kept as right ID, loaded after the
 *                          fingerprint, and removed
 *
 * valac --pkg liblocalauth-1 unlock.vala
 * Every step prints one line (the same lines as the Python, GJS and C examples). */

const La.Policy BIOMETRICS = La.Policy.DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS;

void say (string line) {
    stdout.printf ("%s\n", line);
    stdout.flush ();
}

void failure (string step, GLib.Error error) {
    var name = La.Error.get_dbus_error_name (error);
    say ("%s: error %d %s".printf (step, error.code, name ?? "-"));
}

async void evaluate (La.Context context, string step, string reason, bool cancel_on_first_status) {
    var cancellable = new Cancellable ();
    var handler = context.status.connect ((status) => {
        say ("status: " + status);
        if (cancel_on_first_status) {
            cancellable.cancel (); // the service answers with AppCancel
        }
    });
    try {
        yield context.evaluate_policy (BIOMETRICS, reason, cancellable);
        say (step + ": success");
    } catch (GLib.Error error) {
        failure (step, error);
    }
    context.disconnect (handler);
}

async void keep_and_load (string identifier, string secret) {
    var store = La.RightStore.get_default ();
    try {
        yield store.save_right (new La.Right (La.RightRequirement.BIOMETRY), identifier,
                                new Bytes (secret.data), null);
        say ("store: ok");
    } catch (GLib.Error error) {
        failure ("store", error);
        return;
    }
    try {
        var right = yield store.right_for_identifier (identifier, null);
        right.status.connect ((status) => say ("status: " + status));
        try {
            yield right.authorize ("Open the example's secret", null);
            var data = yield right.get_secret ().load_data (null);
            // The secret's bytes carry no NUL: copy exactly their length.
            var text = new StringBuilder ();
            text.append_len ((string) data.get_data (), (ssize_t) data.get_size ());
            say ("load: " + text.str);
        } catch (GLib.Error error) {
            failure ("load", error);
        }
        right.deauthorize ();
        yield store.remove_right_for_identifier (identifier, null);
        say ("remove: ok");
    } catch (GLib.Error error) {
        failure ("remove", error);
    }
}

async int run (string[] args) {
    var context = new La.Context ();
    try {
        context.can_evaluate_policy (BIOMETRICS);
    } catch (GLib.Error error) {
        failure ("preflight", error);
        return 1;
    }
    say ("preflight: ok biometry-type=%d".printf ((int) context.biometry_type));
    if (args.length == 2 && args[1] == "--preflight") {
        return 0;
    }
    if (args.length != 3) {
        stderr.printf ("usage: unlock --preflight | unlock ID SECRET\n");
        return 2;
    }
    var state = context.get_evaluated_policy_domain_state ();
    say ("domain-state: %d bytes".printf (state != null ? (int) state.get_size () : 0));
    yield evaluate (context, "evaluate", "Unlock the example", false);
    yield evaluate (context, "cancel", "Unlock, then cancel", true);
    yield keep_and_load (args[1], args[2]);
    return 0;
}

int main (string[] args) {
    var loop = new MainLoop ();
    int status = 1;
    run.begin (args, (source, result) => {
        status = run.end (result);
        loop.quit ();
    });
    loop.run ();
    return status;
}
