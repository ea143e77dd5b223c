//! The string form of a label selector, lexed and parsed the way apimachinery's
//! `labels.Parse` does (without the numeric `<`/`>` operators, which `LabelSelector` lacks).
//!
//! ```text
//! selector    := "" | requirement ("," requirement)*
//! requirement := "!" key | key | key ("=" | "==" | "!=") value? | key ("in" | "notin") set
//! set         := "(" value? ("," value?)* ")"
//! ```
//!
//! Identifiers run until whitespace or one of `= ! ( ) , < >`; `in` and `notin` are keywords
//! where an operator is expected. An absent value is the empty string.

use super::{Operator, Requirement};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    Eq,
    DoubleEq,
    NotEq,
    Bang,
    Open,
    Close,
    Comma,
    Unsupported(&'a str),
    End,
}

impl Token<'_> {
    fn describe(&self) -> String {
        match self {
            Token::Ident(s) => format!("{s:?}"),
            Token::Eq => "'='".into(),
            Token::DoubleEq => "'=='".into(),
            Token::NotEq => "'!='".into(),
            Token::Bang => "'!'".into(),
            Token::Open => "'('".into(),
            Token::Close => "')'".into(),
            Token::Comma => "','".into(),
            Token::Unsupported(s) => format!("'{s}'"),
            Token::End => "the end".into(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '<' | '>')
}

fn lex(s: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches([' ', '\t', '\r', '\n']);
        let Some(c) = rest.chars().next() else {
            tokens.push(Token::End);
            return tokens;
        };
        let (token, len) = match c {
            '=' if rest.starts_with("==") => (Token::DoubleEq, 2),
            '=' => (Token::Eq, 1),
            '!' if rest.starts_with("!=") => (Token::NotEq, 2),
            '!' => (Token::Bang, 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            ',' => (Token::Comma, 1),
            '<' | '>' => (Token::Unsupported(&rest[..1]), 1),
            _ => {
                let len = rest
                    .find(|c: char| c.is_ascii_whitespace() || is_special(c))
                    .unwrap_or(rest.len());
                (Token::Ident(&rest[..len]), len)
            }
        };
        tokens.push(token);
        rest = &rest[len..];
    }
}

struct Parser<'a> {
    tokens: Vec<Token<'a>>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Token<'a> {
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token<'a> {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let negated = *self.peek() == Token::Bang;
        if negated {
            self.pos += 1;
        }
        let key = match self.next() {
            Token::Ident(k) if k != "in" && k != "notin" => k,
            other => return Err(format!("found {}, expected a key", other.describe())),
        };
        if negated {
            return Requirement::new(key, Operator::DoesNotExist, Vec::new());
        }
        let (op, values) = match self.next() {
            Token::End | Token::Comma => {
                self.pos -= 1;
                (Operator::Exists, Vec::new())
            }
            Token::Eq | Token::DoubleEq => (Operator::Equals, vec![self.exact_value()?]),
            Token::NotEq => (Operator::NotEquals, vec![self.exact_value()?]),
            Token::Ident("in") => (Operator::In, self.set()?),
            Token::Ident("notin") => (Operator::NotIn, self.set()?),
            Token::Unsupported(op) => {
                return Err(format!("operator '{op}' is not supported"));
            }
            other => {
                return Err(format!(
                    "found {} after key {key:?}, expected an operator, ',' or the end",
                    other.describe()
                ))
            }
        };
        Requirement::new(key, op, values)
    }

    /// The value after `=`, `==` or `!=`: an identifier, or empty before `,` or the end.
    fn exact_value(&mut self) -> Result<String, String> {
        match self.peek() {
            Token::End | Token::Comma => Ok(String::new()),
            Token::Ident(v) => {
                let v = v.to_string();
                self.pos += 1;
                Ok(v)
            }
            other => Err(format!("found {}, expected a value", other.describe())),
        }
    }

    /// `( [value] {, [value]} )`; an empty slot is the empty value.
    fn set(&mut self) -> Result<Vec<String>, String> {
        match self.next() {
            Token::Open => {}
            other => return Err(format!("found {}, expected '('", other.describe())),
        }
        let mut values = Vec::new();
        let mut current: Option<&str> = None;
        let mut seen_any = false;
        loop {
            match self.next() {
                Token::Ident(v) if current.is_none() => current = Some(v),
                Token::Comma => values.push(current.take().unwrap_or("").to_string()),
                Token::Close if seen_any => {
                    values.push(current.take().unwrap_or("").to_string());
                    return Ok(values);
                }
                other => {
                    return Err(format!(
                        "found {}, expected a value, ',' or ')'",
                        other.describe()
                    ))
                }
            }
            seen_any = true;
        }
    }
}

/// Parse the string form into requirements (unsorted).
pub(super) fn parse(s: &str) -> Result<Vec<Requirement>, String> {
    let mut p = Parser {
        tokens: lex(s),
        pos: 0,
    };
    let mut reqs = Vec::new();
    if *p.peek() == Token::End {
        return Ok(reqs);
    }
    loop {
        reqs.push(p.requirement()?);
        match p.next() {
            Token::End => return Ok(reqs),
            Token::Comma => {}
            other => {
                return Err(format!(
                    "found {}, expected ',' or the end",
                    other.describe()
                ))
            }
        }
    }
}
