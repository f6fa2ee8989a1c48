internal import CGtk
internal import CGtkShims
import DBusCore
import Glibc
import LocalAuthShared

/// The sheet of one evaluation, as Apple's: the fingerprint glyph, who asks
/// (the program the service proved is the headline; the name the app
/// declares is secondary and marked as declared), the
/// app's reason, the reader's state, Cancel and the fallback button.
/// Escape cancels, Enter chooses the fallback. Colours come from the theme,
/// so the sheet follows dark and light.
@AgentActor
final class PromptWindow {
    /// ShowPrompt's details, with the contract's defaults.
    struct Sheet {
        /// Who asks, as the service proved it (a sandbox's app id, else the
        /// executable's path); nil when the service could not tell. The agent
        /// reads nothing itself: a process of its own uid can forge what it
        /// could read (a /.flatpak-info in a user namespace, its argv).
        let program: String?
        /// What the app says it is (`app-name`): shown, never as the headline.
        let appName: String?
        let reason: String
        let cancelTitle: String
        /// nil: no fallback button.
        let fallbackTitle: String?

        init(_ details: [String: DBusValue]) {
            program = details[LocalAuthPrompt.Detail.program]?.string.flatMap { $0.isEmpty ? nil : $0 }
            appName = details[LocalAuthPrompt.Detail.appName]?.string.flatMap { $0.isEmpty ? nil : $0 }
            reason = details[LocalAuthPrompt.Detail.reason]?.string ?? ""
            let cancel = details[LocalAuthPrompt.Detail.cancelTitle]?.string ?? ""
            cancelTitle = cancel.isEmpty ? "Cancel" : cancel
            let policy = details[LocalAuthPrompt.Detail.policy]?.uint32 ?? 1
            // Policy 2: the polkit agent asks for the password at the same time.
            if policy == PolicyValue.deviceOwnerAuthentication.rawValue {
                fallbackTitle = nil
            } else {
                let fallback = details[LocalAuthPrompt.Detail.fallbackTitle]?.string
                fallbackTitle = fallback == nil ? "Enter Password" : (fallback!.isEmpty ? nil : fallback)
            }
        }

        /// The headline: the program's own name (the last path component,
        /// or the sandbox's app id).
        var headline: String {
            guard let program else { return "An unidentified program" }
            return program.split(separator: "/").last.map(String.init) ?? program
        }

        /// The line under it: the full program, and what the app declares, marked so.
        var detail: String {
            var lines = [program.map { "Requested by \($0)" } ?? "The service could not tell which program asks"]
            if let appName { lines.append("Declares itself as “\(appName)” (not verified)") }
            return lines.joined(separator: "\n")
        }
    }

    let id: String
    private let window: UnsafeMutablePointer<GtkWidget>
    private let icon: UnsafeMutablePointer<GtkWidget>
    private let status: UnsafeMutablePointer<GtkWidget>
    private let cancelButton: UnsafeMutablePointer<GtkWidget>
    private let fallbackButton: UnsafeMutablePointer<GtkWidget>?
    private let onAnswer: @AgentActor (LocalAuthPrompt.Answer) -> Void
    private var finished = false
    /// Keeps the callback boxes alive as long as the window.
    private var callbacks: [CallbackBox] = []

    init(id: String, sheet: Sheet, onAnswer: @escaping @AgentActor (LocalAuthPrompt.Answer) -> Void) {
        self.id = id
        self.onAnswer = onAnswer
        Style.install()
        window = gtk_window_new()
        gtk_window_set_title(cast(window), "LocalAuth: \(sheet.headline)")
        gtk_window_set_resizable(cast(window), 0)
        gtk_window_set_default_size(cast(window), 400, -1)
        gtk_widget_add_css_class(window, "localauth-sheet")

        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 10)!
        gtk_widget_add_css_class(box, "sheet-body")

        icon = Self.fingerprintIcon()
        gtk_widget_add_css_class(icon, "sheet-icon")
        gtk_widget_set_halign(icon, GTK_ALIGN_CENTER)
        cgtkshims_accessible_set_label(icon, "Fingerprint reader")
        gtk_box_append(cast(box), icon)

        // The program the service proved is the title, since the app cannot
        // choose it; the name the app declares is only under it, marked as
        // declared, so `/usr/bin/python3` saying "System Settings" reads as
        // python3.
        let title = Self.label(sheet.headline, css: "sheet-title")
        gtk_box_append(cast(box), title)
        let who = Self.label(sheet.detail, css: "sheet-program")
        gtk_label_set_selectable(OpaquePointer(who), 0)
        gtk_box_append(cast(box), who)

        let reason = Self.label(sheet.reason, css: "sheet-reason")
        gtk_box_append(cast(box), reason)

        status = Self.label("Waiting for the fingerprint reader…", css: "sheet-status")
        gtk_box_append(cast(box), status)

        let buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)!
        gtk_box_set_homogeneous(cast(buttons), 1)
        gtk_widget_add_css_class(buttons, "sheet-buttons")
        cancelButton = gtk_button_new_with_mnemonic(sheet.cancelTitle)
        gtk_widget_set_hexpand(cancelButton, 1)
        gtk_box_append(cast(buttons), cancelButton)
        if let fallback = sheet.fallbackTitle {
            let button = gtk_button_new_with_label(fallback)!
            gtk_widget_set_hexpand(button, 1)
            gtk_widget_add_css_class(button, "suggested-action")
            gtk_box_append(cast(buttons), button)
            fallbackButton = button
        } else {
            fallbackButton = nil
        }
        gtk_box_append(cast(box), buttons)
        gtk_window_set_child(cast(window), box)

        // Accessibility: the sheet is named by its title and described by
        // the program and the reason; the status label is read as it changes.
        cgtkshims_accessible_labelled_by(window, title)
        cgtkshims_accessible_described_by(window, reason)
        cgtkshims_accessible_set_description(window, "\(sheet.headline) asks for your fingerprint: \(sheet.reason)")
        cgtkshims_accessible_described_by(icon, status)

        connect(cancelButton) { $0.choose(.userCancel) }
        if let fallbackButton {
            connect(fallbackButton) { $0.choose(.userFallback) }
            gtk_window_set_default_widget(cast(window), fallbackButton)
        }
        let close = CallbackBox { [weak self] in self?.choose(.userCancel) }
        callbacks.append(close)
        cgtkshims_on_close_request(window, { data in
            Unmanaged<CallbackBox>.fromOpaque(data!).takeUnretainedValue().run()
        }, Unmanaged.passUnretained(close).toOpaque())
        let keys = KeyBox { [weak self] keyval in self?.key(keyval) ?? false }
        cgtkshims_on_key_pressed(window, { data, keyval in
            Unmanaged<KeyBox>.fromOpaque(data!).takeUnretainedValue().run(keyval) ? 1 : 0
        }, Unmanaged.passRetained(keys).toOpaque())

        gtk_window_present(cast(window))
        if let fallbackButton { gtk_widget_grab_focus(fallbackButton) } else { gtk_widget_grab_focus(cancelButton) }
        reportGeometry(attempt: 0)
    }

    // MARK: The service's updates

    /// UpdatePrompt: the reader's state in words.
    func update(_ code: String) {
        guard !finished else { return }
        let text: String
        var css = "sheet-status"
        switch code {
        case EvaluationProgress.placeFinger.rawValue: text = "Place your finger on the reader"
        case EvaluationProgress.retryScan.rawValue: text = "The scan did not work, try again"
        case EvaluationProgress.swipeTooShort.rawValue: text = "Swipe was too short, try again"
        case EvaluationProgress.fingerNotCentered.rawValue: text = "Center your finger on the reader and try again"
        case EvaluationProgress.removeAndRetry.rawValue: text = "Lift your finger and try again"
        case EvaluationProgress.tooFast.rawValue: text = "Too fast, hold your finger on the reader a little longer"
        case EvaluationProgress.readerBusy.rawValue: text = "The reader is in use by another program; waiting for it"
        case EvaluationProgress.noMatch.rawValue:
            text = "Not recognized, try again"
            css = "sheet-status-error"
        default: text = "Place your finger on the reader"
        }
        setStatus(text, css: css)
    }

    /// ClosePrompt (or the service gone, or the person's choice): says how it
    /// ended for a moment when there is something to say, then closes.
    func finish(_ outcome: String) {
        guard !finished else { return }
        finished = true
        let linger: Double
        switch LocalAuthPrompt.Outcome(rawValue: outcome) {
        case .cancelled?:
            return destroy()
        case .success?:
            setStatus("Verified", css: "sheet-status-success")
            linger = 0.8
        case .lockedOut?:
            setStatus("Too many attempts", css: "sheet-status-error")
            linger = 1.5
        case .failed?, nil:
            setStatus("Not recognized", css: "sheet-status-error")
            linger = 1.2
        }
        gtk_widget_set_sensitive(cancelButton, 0)
        if let fallbackButton { gtk_widget_set_sensitive(fallbackButton, 0) }
        _ = EventLoop.processDefault.schedule(after: linger) {
            AgentActor.assumeIsolated { self.destroy() }
        }
    }

    private func destroy() {
        finished = true
        gtk_window_destroy(cast(window))
    }

    // MARK: The person's choice

    private func choose(_ answer: LocalAuthPrompt.Answer) {
        guard !finished else { return }
        onAnswer(answer)
    }

    private func key(_ keyval: UInt32) -> Bool {
        switch Int32(keyval) {
        case GDK_KEY_Escape:
            choose(.userCancel)
            return true
        case GDK_KEY_Return, GDK_KEY_KP_Enter, GDK_KEY_ISO_Enter:
            if let fallbackButton, !finished {
                gtk_widget_activate(fallbackButton)
                return true
            }
            return false
        default:
            return false
        }
    }

    private func setStatus(_ text: String, css: String) {
        gtk_label_set_text(OpaquePointer(status), text)
        for name in ["sheet-status", "sheet-status-error", "sheet-status-success"] {
            gtk_widget_remove_css_class(status, name)
            gtk_widget_remove_css_class(icon, name)
        }
        gtk_widget_add_css_class(status, css)
        gtk_widget_add_css_class(icon, css)
        cgtkshims_accessible_set_label(icon, "Fingerprint reader: \(text)")
    }

    // MARK: Building

    private func connect(_ button: UnsafeMutablePointer<GtkWidget>, _ action: @escaping @AgentActor (PromptWindow) -> Void) {
        let box = CallbackBox { [weak self] in if let self { action(self) } }
        _ = cgtkshims_connect(button, "clicked", { data in
            Unmanaged<CallbackBox>.fromOpaque(data!).takeUnretainedValue().run()
        }, Unmanaged.passRetained(box).toOpaque(), { data in
            Unmanaged<CallbackBox>.fromOpaque(data!).release()
        })
    }

    private static func label(_ text: String, css: String) -> UnsafeMutablePointer<GtkWidget> {
        let label = gtk_label_new(text)!
        gtk_label_set_wrap(OpaquePointer(label), 1)
        gtk_label_set_max_width_chars(OpaquePointer(label), 44)
        gtk_label_set_justify(OpaquePointer(label), GTK_JUSTIFY_CENTER)
        gtk_widget_add_css_class(label, css)
        return label
    }

    /// The theme's fingerprint icon (adwaita-icon-theme has
    /// auth-fingerprint-symbolic), else one drawn with cairo in the text colour.
    private static func fingerprintIcon() -> UnsafeMutablePointer<GtkWidget> {
        let theme = gtk_icon_theme_get_for_display(gdk_display_get_default())
        if getenv("LOCALAUTH_PROMPT_DRAWN_ICON") == nil {
            for name in ["auth-fingerprint-symbolic", "fingerprint-symbolic"] where gtk_icon_theme_has_icon(theme, name) != 0 {
                let image = gtk_image_new_from_icon_name(name)!
                gtk_image_set_pixel_size(OpaquePointer(image), 64)
                return image
            }
        }
        let area = gtk_drawing_area_new()!
        gtk_drawing_area_set_content_width(cast(area), 64)
        gtk_drawing_area_set_content_height(cast(area), 64)
        gtk_drawing_area_set_draw_func(cast(area), { area, cr, width, height, _ in
            guard let area, let cr else { return }
            var color = GdkRGBA()
            cgtkshims_widget_color(UnsafeMutableRawPointer(area), &color)
            cairo_set_source_rgba(cr, Double(color.red), Double(color.green), Double(color.blue), Double(color.alpha))
            let size = Double(min(width, height))
            let (cx, cy) = (Double(width) / 2, Double(height) / 2 - size * 0.04)
            cairo_set_line_width(cr, size / 18)
            cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
            // Ridges: nested arches whose two legs run down unevenly, as a
            // fingertip's do (the shape of the usual fingerprint glyph).
            let legs: [(left: Double, right: Double)] = [(0.20, 0.30), (0.34, 0.16), (0.26, 0.36), (0.36, 0.24), (0.16, 0.30)]
            for (ring, leg) in legs.enumerated() {
                let radius = size * (0.07 + Double(ring) * 0.08)
                cairo_new_sub_path(cr)
                cairo_move_to(cr, cx - radius, cy + size * leg.left)
                cairo_line_to(cr, cx - radius, cy)
                cairo_arc(cr, cx, cy, radius, Double.pi, Double.pi * 2)
                cairo_line_to(cr, cx + radius, cy + size * leg.right)
                cairo_stroke(cr)
            }
        }, nil, nil)
        return area
    }

    /// For the tests (and anyone scripting the sheet): where the buttons are
    /// in the window's X surface, once laid out, when LOCALAUTH_PROMPT_GEOMETRY is set.
    private func reportGeometry(attempt: Int) {
        guard getenv("LOCALAUTH_PROMPT_GEOMETRY") != nil, !finished else { return }
        var offsetX = 0.0, offsetY = 0.0
        gtk_native_get_surface_transform(OpaquePointer(window), &offsetX, &offsetY)
        var parts: [String] = []
        for (name, button) in [("cancel", cancelButton), ("fallback", fallbackButton)] {
            guard let button else { continue }
            var bounds = graphene_rect_t()
            // Laid out once it has an allocation of its own (bounds before that are estimates).
            guard gtk_widget_get_mapped(button) != 0, gtk_widget_get_width(button) > 1,
                  gtk_widget_compute_bounds(button, window, &bounds) != 0, bounds.origin.x >= 0 else {
                if attempt < 50 {
                    _ = EventLoop.processDefault.schedule(after: 0.1) {
                        AgentActor.assumeIsolated { self.reportGeometry(attempt: attempt + 1) }
                    }
                }
                return
            }
            let x = Int(offsetX + Double(bounds.origin.x) + Double(bounds.size.width) / 2)
            let y = Int(offsetY + Double(bounds.origin.y) + Double(bounds.size.height) / 2)
            parts.append("\(name)=\(x),\(y)")
        }
        Output.line("geometry \(id) " + parts.joined(separator: " "))
    }
}

/// A window's callback, reached from C through an unmanaged pointer; runs on
/// the loop's thread (GTK calls back only there, which `run` checks).
/// Immutable, hence @unchecked Sendable.
final class CallbackBox: @unchecked Sendable {
    let action: @AgentActor () -> Void
    init(_ action: @escaping @AgentActor () -> Void) { self.action = action }
    func run() { AgentActor.assumeIsolated { action() } }
}

final class KeyBox: @unchecked Sendable {
    let action: @AgentActor (UInt32) -> Bool
    init(_ action: @escaping @AgentActor (UInt32) -> Bool) { self.action = action }
    func run(_ keyval: UInt32) -> Bool { AgentActor.assumeIsolated { action(keyval) } }
}

/// A GTK object pointer as another of its types (GtkWindow, GtkBox, …): GTK's
/// own casting macros are not available to Swift.
private func cast<T>(_ widget: UnsafeMutablePointer<GtkWidget>) -> UnsafeMutablePointer<T> {
    UnsafeMutableRawPointer(widget).assumingMemoryBound(to: T.self)
}

/// The sheet's look: spacing and the status colours, from the theme's named
/// colours, so that it follows dark and light.
@AgentActor
enum Style {
    private static var installed = false

    static func install() {
        guard !installed else { return }
        installed = true
        let css = """
            .sheet-body { margin: 24px 28px 20px 28px; }
            .sheet-icon { color: mix(@theme_selected_bg_color, @theme_fg_color, 0.2); margin-bottom: 4px; }
            .sheet-title { font-weight: bold; font-size: 15pt; }
            .sheet-program { font-size: 9pt; opacity: 0.7; }
            .sheet-reason { margin-top: 4px; margin-bottom: 4px; }
            .sheet-status { font-weight: bold; }
            .sheet-status-error { font-weight: bold; color: @error_color; }
            label.sheet-status-success { font-weight: bold; color: @success_color; }
            image.sheet-status-error { color: @error_color; }
            image.sheet-status-success { color: @success_color; }
            .sheet-buttons { margin-top: 10px; }
            """
        let provider = gtk_css_provider_new()
        cgtkshims_css_provider_load(provider, css)
        gtk_style_context_add_provider_for_display(gdk_display_get_default(), OpaquePointer(provider),
                                                   UInt32(GTK_STYLE_PROVIDER_PRIORITY_APPLICATION))
    }
}
