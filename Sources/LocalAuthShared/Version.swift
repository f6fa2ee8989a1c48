/// The release, as `localauthd --version` and `localauthctl --version` print
/// it. The one source is the top-level VERSION file (the Makefile, the .deb
/// and the C library read it); a unit test (VersionTests) fails when this
/// constant and that file disagree.
public enum LocalAuthVersion {
    public static let string = "0.1.0"
}
