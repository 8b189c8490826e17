//! Kafka's `ssl.principal.mapping.rules` (KIP-371, `SslPrincipalMapper`):
//! how the subject of a client certificate becomes a principal name.
//!
//! Rules are tried in order; the first whose pattern matches the whole
//! distinguished name gives the name: `RULE:pattern/replacement/` with an
//! optional `L` or `U` after the last slash (lower or upper case the result),
//! or `DEFAULT`, the distinguished name itself. Rules are separated by commas
//! or new lines; a `/` inside a pattern or replacement is written `\/`. No
//! rule matching is an error in Kafka (the connection fails); here the
//! caller treats it the same way. Patterns are Rust `regex`, which covers the
//! Java syntax Kafka's examples use (groups, `.*?`, classes) and replacements
//! refer to groups as `$1`, as Java's do. It owns parsing and applying the
//! rules; it must not read certificates.

use super::{ConfigError, Result, invalid};

/// `ssl.principal.mapping.rules`.
pub const KEY: &str = "ssl.principal.mapping.rules";

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        pattern: regex::Regex,
        replacement: String,
        case: Option<char>,
    },
}

/// Parsed `ssl.principal.mapping.rules` (default: `DEFAULT`).
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
    text: String,
}

impl PartialEq for PrincipalMapper {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Default for PrincipalMapper {
    fn default() -> Self {
        Self {
            rules: vec![Rule::Default],
            text: "DEFAULT".to_owned(),
        }
    }
}

/// Reads up to the next unescaped `/`; returns (text without escapes, rest after the `/`).
fn until_slash(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, '/')) => out.push('/'),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '/' => return Some((out, &s[i + 1..])),
            c => out.push(c),
        }
    }
    None
}

impl PrincipalMapper {
    /// Parses the rules.
    ///
    /// Errors: [`ConfigError::Invalid`] for `ssl.principal.mapping.rules`
    /// naming the rule that does not parse or whose pattern is not a regex.
    pub fn parse(text: &str) -> Result<Self> {
        let bad = |reason: String| invalid(KEY, text, reason);
        let mut rules = Vec::new();
        let mut rest = text.trim_start();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("DEFAULT") {
                rules.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let (pattern, after) = until_slash(after)
                    .ok_or_else(|| bad("a RULE without its pattern/replacement/".to_owned()))?;
                let (replacement, after) = until_slash(after)
                    .ok_or_else(|| bad(format!("RULE:{pattern}/ has no replacement")))?;
                let (case, after) = match after.chars().next() {
                    Some(c @ ('L' | 'U')) => (Some(c), &after[1..]),
                    _ => (None, after),
                };
                let pattern = regex::Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| bad(format!("pattern {pattern:?}: {e}")))?;
                rules.push(Rule::Replace {
                    pattern,
                    replacement,
                    case,
                });
                rest = after;
            } else {
                return Err(bad(format!("{rest:?} is neither DEFAULT nor RULE:…")));
            }
            rest = rest.trim_start_matches([' ', '\t']);
            match rest.chars().next() {
                None => {}
                Some(',' | '\n') => rest = rest[1..].trim_start(),
                Some(_) => return Err(bad(format!("expected , before {rest:?}"))),
            }
        }
        if rules.is_empty() {
            return Err(ConfigError::Invalid {
                key: KEY.to_owned(),
                value: text.to_owned(),
                reason: "no rule".to_owned(),
            });
        }
        Ok(Self {
            rules,
            text: text.to_owned(),
        })
    }

    /// The principal name of distinguished name `dn` (RFC 2253, as Java's
    /// `X500Principal.getName()` writes it); `None` when no rule matches.
    pub fn map(&self, dn: &str) -> Option<String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Some(dn.to_owned()),
                Rule::Replace {
                    pattern,
                    replacement,
                    case,
                } => {
                    if pattern.is_match(dn) {
                        let name = pattern.replace_all(dn, replacement.as_str()).into_owned();
                        return Some(match case {
                            Some('L') => name.to_lowercase(),
                            Some('U') => name.to_uppercase(),
                            _ => name,
                        });
                    }
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keeps_the_distinguished_name() {
        let m = PrincipalMapper::default();
        assert_eq!(m.map("CN=a,O=b").as_deref(), Some("CN=a,O=b"));
    }

    // Kafka's SslPrincipalMapperTest examples.
    #[test]
    fn rules_apply_in_order_with_groups_and_case() {
        let m = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\
             RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT",
        )
        .expect("parses");
        assert_eq!(
            m.map("CN=kafka-server,OU=ServiceUsers,O=Org").as_deref(),
            Some("kafka-server")
        );
        assert_eq!(
            m.map("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US")
                .as_deref(),
            Some("duke@javasoft")
        );
        assert_eq!(m.map("OU=x,cn=admin,O=y").as_deref(), Some("ADMIN"));
        assert_eq!(m.map("O=nothing").as_deref(), Some("O=nothing"));
    }

    #[test]
    fn no_matching_rule_maps_to_nothing_and_escaped_slashes_work() {
        let m = PrincipalMapper::parse("RULE:^CN=(.*)\\/x$/$1/").expect("parses");
        assert_eq!(m.map("CN=a/x").as_deref(), Some("a"));
        assert_eq!(m.map("CN=a"), None);
    }

    #[test]
    fn malformed_rules_are_refused_naming_the_key() {
        for text in ["RULE:abc", "SOMETHING", "RULE:(/x/"] {
            let err = PrincipalMapper::parse(text).expect_err(text);
            assert!(err.to_string().contains(KEY), "{err}");
        }
    }
}
