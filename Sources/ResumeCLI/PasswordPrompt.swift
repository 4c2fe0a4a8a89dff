import Glibc
import ResumeKit

/// Reads a password from the terminal with echo off, as curl does for `-u USER`.
enum PasswordPrompt {
    static func ask(_ prompt: String) -> String {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        let input = fd >= 0 ? fd : 0
        defer { if fd >= 0 { close(fd) } }
        _ = prompt.withCString { write(fd >= 0 ? fd : 2, $0, strlen($0)) }
        var saved = termios()
        let haveTerminal = tcgetattr(input, &saved) == 0
        if haveTerminal {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(input, TCSAFLUSH, &quiet)
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = uninterrupted { read(input, &byte, 1) }
            if n <= 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        if haveTerminal { tcsetattr(input, TCSAFLUSH, &saved) }
        _ = write(fd >= 0 ? fd : 2, "\n", 1)
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return String(decoding: line, as: UTF8.self)
    }
}
