// On Apple's platforms `import LocalAuthentication` brings Foundation with it,
// and sample code relies on that (NSError, Data, DispatchQueue). Same here.
@_exported import Foundation
