//! Which characters a name, short link or code may not hold: control characters, and
//! the invisible marks that reorder or isolate text (bidirectional overrides, embeddings,
//! isolates and the left-to-right and right-to-left marks). Shown on a page, in a CSV
//! file or in a mail, they make one tenant's text look like something else to another
//! reader: a right-to-left override (U+202E) before `lper.exe` shows it as `exe.rlep`, a
//! newline starts a fake line of a log or a file.

/// The first character of `text` that a name, short link or code may not hold, if any.
pub fn forbidden_char(text: &str) -> Option<char> {
    text.chars().find(|&c| is_forbidden(c))
}

/// Whether `c` is a control character (C0, DEL, C1) or a bidirectional formatting
/// character: U+200E and U+200F (marks), U+202A to U+202E (embeddings and overrides),
/// U+2066 to U+2069 (isolates).
pub fn is_forbidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The refusal of a field whose value holds a forbidden character, naming the field.
pub fn refusal(field: &str) -> String {
    format!("{field} must not contain control characters or bidirectional formatting characters")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_forbidden() {
        for c in [
            '\0', '\t', '\n', '\r', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}',
        ] {
            assert!(is_forbidden(c), "{:?}", c);
            assert_eq!(forbidden_char(&format!("Acme{c}Partners")), Some(c));
        }
    }

    #[test]
    fn bidirectional_formatting_characters_are_forbidden() {
        let marks = ['\u{200E}', '\u{200F}'];
        let embeddings = '\u{202A}'..='\u{202E}';
        let isolates = '\u{2066}'..='\u{2069}';
        for c in marks.into_iter().chain(embeddings).chain(isolates) {
            assert!(is_forbidden(c), "U+{:04X}", c as u32);
        }
        assert_eq!(forbidden_char("invoice\u{202E}fdp.exe"), Some('\u{202E}'));
    }

    #[test]
    fn ordinary_text_of_any_script_is_allowed() {
        for text in [
            "Acme Partners",
            "Zoë & Søren",
            "مرحبا بالعالم",
            "שלום",
            "日本の店",
            "emoji 🎉 ok",
            "alice-2024_x",
            "",
        ] {
            assert_eq!(forbidden_char(text), None, "{text}");
        }
        // Neighbours of the forbidden ranges.
        for c in [
            '\u{200D}', '\u{202F}', '\u{2065}', '\u{206A}', ' ', '\u{a0}',
        ] {
            assert!(!is_forbidden(c), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn the_refusal_names_the_field() {
        assert!(refusal("short_link").starts_with("short_link must not contain"));
    }
}
