#!/bin/bash
# lbctl's completion in the three shells, generated from the built binary as
# the package installs it: bash (the function with COMP_WORDS), zsh (an
# interactive zsh on a pty with compinit and the generated _lbctl in $fpath:
# the real completion system, compadd recording what it offers) and fish
# (`complete -C`, fish's own engine). Values included: `-o <TAB>` offers the
# output formats. Needs bash, zsh and fish (tools/setup.sh); a missing shell
# fails the test.
#
# Usage: completion_test.sh LBCTL
set -uo pipefail
lbctl=${1:?usage: completion_test.sh LBCTL}
work=$(mktemp -d /tmp/lbctl-completion.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { printf 'lbctl_completion: FAIL %s\n' "$*"; failures=$((failures + 1)); }
for sh in bash zsh fish; do
  command -v "$sh" >/dev/null || { echo "lbctl_completion: $sh is not installed (tools/setup.sh installs it)"; exit 1; }
done
"$lbctl" --generate-bash-completion >"$work/lbctl.bash" || { echo "--generate-bash-completion failed"; exit 1; }
mkdir -p "$work/zsh"
"$lbctl" --generate-zsh-completion >"$work/zsh/_lbctl" || { echo "--generate-zsh-completion failed"; exit 1; }
"$lbctl" --generate-fish-completion >"$work/lbctl.fish" || { echo "--generate-fish-completion failed"; exit 1; }

# The commands as `lbctl help` lists them (the tree's truth: the cases
# below need no update when a command is added), and without help and
# version (what `help` takes).
commands=$("$lbctl" help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && $1 != "" { print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')
topics=$(tr ' ' '\n' <<<"$commands" | grep -vx 'help\|version' | tr '\n' ' ' | sed 's/ $//')
[[ $commands == *status*vip* ]] || { echo "lbctl_completion: lbctl help lists no commands: '$commands'"; exit 1; }

# Each case: the line typed before TAB, and the words to be offered
# (sorted; @files: file names).
cases=(
  'lbctl '                               "$commands"
  'lbctl st'                             'status'
  'lbctl vip '                           'add del list quic-config quic-retire quic-rotate relearn set-ownership'
  'lbctl -o '                            'json table'
  'lbctl status --output '               'json table'
  'lbctl backend add X Y --w'            '--weight'
  'lbctl vip add X --mode '              'encap gue'
  'lbctl vip set-ownership X '           'active-standby all'
  'lbctl drill --mode '                  'fence stop'
  'lbctl --socket vip '                  "$commands"
  'lbctl help '                          "$topics"
  'lbctl config apply -f '               '@files'
  'lbctl --cacert '                      '@files'
)

# A directory's entries end in / for fish and not for bash: compared without.
sorted() { tr ' ' '\n' | sed '/^$/d; s|/$||' | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# The shells run in $work/cwd, where a file name completes to these.
mkdir -p "$work/cwd/certs"
touch "$work/cwd/vips.conf" "$work/cwd/ca.pem"
files="ca.pem certs vips.conf"

# ---- bash ----
bash_complete() { # LINE -> offered words
  (cd "$work/cwd" && bash -c 'source ../lbctl.bash; read -r -a COMP_WORDS <<<"$1"; [[ $1 == *" " ]] && COMP_WORDS+=("");
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _ballast_lbctl; printf "%s\n" "${COMPREPLY[@]}"' _ "$1") | sorted
}
# ---- fish ----
fish_complete() {
  (cd "$work/cwd" && fish --no-config -c "source ../lbctl.fish; complete -C '$1'" | sed 's/\t.*//') | sorted
}
# ---- zsh: one interactive shell for every case ----
cat >"$work/drive.zsh" <<'ZSH'
zmodload zsh/zpty
dir=$1 out=$2; shift 2
wait_file() { local n; for n in {1..100}; do [[ -s $1 ]] && return 0; sleep 0.05; done; return 1; }
zpty z zsh -f -i
zpty -w z "cd $dir/cwd; fpath=($dir/zsh \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "compadd() { local -a __hits; builtin compadd -O __hits \"\$@\"; print -rl -- \$__hits >> $out.part; builtin compadd \"\$@\"; }"
zpty -w z "_files() { print -r -- @files >> $out.part; }"
zpty -w z "print ready > $out.ready"
wait_file $out.ready || { print "zsh did not start"; exit 1; }
for line in "$@"; do
  : > $out.part
  zpty -w -n z "$line"$'\t'
  wait_file $out.part
  sleep 0.1
  zpty -w -n z $'\C-u'
  print -r -- "$(sort -u $out.part | tr '\n' ' ')" >> $out
done
zpty -d z
ZSH
lines=()
for ((i = 0; i < ${#cases[@]}; i += 2)); do lines+=("${cases[i]}"); done
zsh -f "$work/drive.zsh" "$work" "$work/zsh.out" "${lines[@]}" || fail "zsh: the driver failed"
mapfile -t zsh_got <"$work/zsh.out"

for ((i = 0; i < ${#cases[@]}; i += 2)); do
  line=${cases[i]} want=${cases[i + 1]}
  for sh in bash zsh fish; do
    case $sh in
      bash) got=$(bash_complete "$line") ;;
      fish) got=$(fish_complete "$line") ;;
      zsh) got=$(sorted <<<"${zsh_got[i / 2]:-}") ;;
    esac
    w=$want
    # bash and fish list the files themselves; zsh's _files was asked.
    [[ $want == @files && $sh != zsh ]] && w=$files
    if [[ $got == "$w" ]]; then
      printf 'lbctl_completion: ok %s: "%s<TAB>" offers %s\n' "$sh" "$line" "$got"
    else
      fail "$sh: \"$line<TAB>\" offers '$got', want '$w'"
    fi
  done
done
((failures == 0)) || { echo "lbctl_completion: $failures failure(s)"; exit 1; }
echo "lbctl_completion: every case offers the same words in bash, zsh and fish"
