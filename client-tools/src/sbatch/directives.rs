//! `#SBATCH` lines: options written into the script itself.
//!
//! Slurm reads them from the lines right after the `#!` line and stops at
//! the first line that is neither a comment nor blank, so a `#SBATCH` further
//! down (after the first command) is an ordinary comment. Words are split on
//! blanks, quotes group words and are removed, and an unquoted `#` at the
//! start of a word begins a comment (`#SBATCH -N 2  # two nodes`).

/// The directive prefix, at the very start of the line.
const MAGIC: &str = "#SBATCH";

/// The words of each `#SBATCH` line of `script`, with 1-based line numbers.
pub fn parse(script: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    for (index, line) in script.split('\n').enumerate().skip(1) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(rest) = line.strip_prefix(MAGIC) {
            if rest.is_empty() || rest.starts_with([' ', '\t']) {
                found.push((index + 1, words(rest)));
                continue;
            }
        }
        let blank = line.chars().all(|c| c == ' ' || c == '\t');
        if !line.starts_with('#') && !blank {
            break;
        }
    }
    found
}

/// Splits one directive's text into words.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None | Some('#') => break,
            Some(_) => {}
        }
        let mut word = String::new();
        let mut quote: Option<char> = None;
        while let Some(&c) = chars.peek() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => word.push(c),
                None if c == '"' || c == '\'' => quote = Some(c),
                None if c.is_whitespace() => break,
                None => word.push(c),
            }
            chars.next();
        }
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn reads_until_first_command() {
        let script = "#!/bin/bash\n#SBATCH -N 2\n\n# a comment\n  \n#SBATCH --time=5 -J x\necho hi\n#SBATCH -p late\n";
        assert_eq!(
            parse(script),
            vec![(2, w(&["-N", "2"])), (6, w(&["--time=5", "-J", "x"]))]
        );
    }

    #[test]
    fn first_line_is_never_a_directive() {
        assert_eq!(
            parse("#SBATCH -N 1\n#SBATCH -n 2\n"),
            vec![(2, w(&["-n", "2"]))]
        );
        assert!(parse("").is_empty());
        assert!(parse("#!/bin/sh").is_empty());
    }

    #[test]
    fn lookalikes_are_comments() {
        let script = "#!/bin/sh\n#SBATCHX -N 1\n# SBATCH -N 2\n #SBATCH -N 3\n#SBATCH -N 4\n";
        // The indented line is not a comment: reading stops there.
        assert!(parse(script).is_empty());
        let script = "#!/bin/sh\n#SBATCHX -N 1\n# SBATCH -N 2\n#SBATCH -N 4\n#SBATCH\n";
        assert_eq!(parse(script), vec![(4, w(&["-N", "4"])), (5, vec![])]);
    }

    #[test]
    fn quotes_and_trailing_comments() {
        assert_eq!(
            words(r#" -J "my job" --comment='a b'"c"  # note"#),
            w(&["-J", "my job", "--comment=a bc"])
        );
        assert_eq!(words("--wrap=a#b"), w(&["--wrap=a#b"]));
        assert_eq!(words(" \"unbalanced"), w(&["unbalanced"]));
        assert_eq!(words("\t"), Vec::<String>::new());
        assert_eq!(words("-J ünï"), w(&["-J", "ünï"]));
    }

    #[test]
    fn dos_line_ends_are_tolerated() {
        assert_eq!(
            parse("#!/bin/sh\r\n#SBATCH -N 2\r\ntrue\r\n"),
            vec![(2, w(&["-N", "2"]))]
        );
    }
}
