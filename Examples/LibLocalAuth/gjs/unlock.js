#!/usr/bin/gjs -m
// SPDX-License-Identifier: MIT
// Unlock with your fingerprint, from JavaScript (GJS and liblocalauth-1).
//
//   gjs -m unlock.js --preflight      only the preflight
//   gjs -m unlock.js ID SECRET        preflight, evaluate, a cancelled evaluation,
//                                     then SECRET kept as right ID, loaded after
//                                     the fingerprint, and removed
//
// Every step prints one line (the same lines as the Python, C and Vala examples).
import Gio from 'gi://Gio';
import GLib from 'gi://GLib';
import LocalAuth from 'gi://LocalAuth?version=1.0';
import System from 'system';

// The library's async calls as promises.
Gio._promisify(LocalAuth.Context.prototype, 'evaluate_policy', 'evaluate_policy_finish');
Gio._promisify(LocalAuth.RightStore.prototype, 'save_right', 'save_right_finish');
Gio._promisify(LocalAuth.RightStore.prototype, 'right_for_identifier', 'right_for_identifier_finish');
Gio._promisify(LocalAuth.RightStore.prototype, 'remove_right_for_identifier', 'remove_right_for_identifier_finish');
Gio._promisify(LocalAuth.Right.prototype, 'authorize', 'authorize_finish');
Gio._promisify(LocalAuth.Secret.prototype, 'load_data', 'load_data_finish');

const BIOMETRICS = LocalAuth.Policy.DEVICE_OWNER_AUTHENTICATION_WITH_BIOMETRICS;

function say(line) {
    print(line);
}

function failure(step, error) {
    if (!(error instanceof GLib.Error))
        throw error;
    const name = LocalAuth.error_get_dbus_error_name(error) ?? '-';
    say(`${step}: error ${error.code} ${name}`);
}

function preflight(context) {
    try {
        context.can_evaluate_policy(BIOMETRICS);
    } catch (error) {
        failure('preflight', error);
        return false;
    }
    say(`preflight: ok biometry-type=${context.biometry_type}`);
    return true;
}

async function evaluate(context, step, reason, cancelOnFirstStatus = false) {
    const cancellable = new Gio.Cancellable();
    const handler = context.connect('status', (_context, status) => {
        say(`status: ${status}`);
        if (cancelOnFirstStatus)
            cancellable.cancel(); // the service answers with AppCancel
    });
    try {
        await context.evaluate_policy(BIOMETRICS, reason, cancellable);
        say(`${step}: success`);
    } catch (error) {
        failure(step, error);
    } finally {
        context.disconnect(handler);
    }
}

async function keepAndLoad(identifier, secret) {
    const store = LocalAuth.RightStore.get_default();
    try {
        await store.save_right(LocalAuth.Right.new(LocalAuth.RightRequirement.BIOMETRY), identifier,
            new GLib.Bytes(new TextEncoder().encode(secret)), null);
        say('store: ok');
    } catch (error) {
        failure('store', error);
        return;
    }
    const right = await store.right_for_identifier(identifier, null);
    right.connect('status', (_right, status) => say(`status: ${status}`));
    try {
        await right.authorize("Open the example's secret", null);
        const data = await right.get_secret().load_data(null);
        say(`load: ${new TextDecoder().decode(data.toArray())}`);
    } catch (error) {
        failure('load', error);
    }
    right.deauthorize();
    await store.remove_right_for_identifier(identifier, null);
    say('remove: ok');
}

async function main(argv) {
    const context = new LocalAuth.Context();
    if (!preflight(context))
        return 1;
    if (argv.length === 1 && argv[0] === '--preflight')
        return 0;
    if (argv.length !== 2) {
        printerr('usage: unlock.js --preflight | unlock.js ID SECRET');
        return 2;
    }
    const state = context.evaluated_policy_domain_state;
    say(`domain-state: ${state ? state.get_size() : 0} bytes`);
    await evaluate(context, 'evaluate', 'Unlock the example');
    await evaluate(context, 'cancel', 'Unlock, then cancel', true);
    await keepAndLoad(argv[0], argv[1]);
    return 0;
}

const loop = new GLib.MainLoop(null, false);
let status = 1;
main(ARGV).then(code => {
    status = code;
    loop.quit();
}, error => {
    logError(error);
    loop.quit();
});
loop.run();
System.exit(status);
