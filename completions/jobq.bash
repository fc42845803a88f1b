# jobq.bash - bash completion for jobq: commands, the options of each
# (read from its --help, so they never fall behind), queue and schedule
# names from the database (through `jobq stats --json` and `jobq cron ls
# --json`, silent on errors), job states, cron subcommands and time zones.
# `make install` puts it where bash-completion finds it
# (share/bash-completion/completions/jobq); or source it.

# _jobq_run ARGS...: jobq with the --db of the line being completed, quiet.
_jobq_run() {
  local cmd=${COMP_WORDS[0]}
  timeout 2 "$cmd" ${_jobq_db:+--db "$_jobq_db"} "$@" 2>/dev/null
}

# _jobq_names WHAT: the names of queues or schedules.
_jobq_names() {
  local out
  if [[ $1 == queues ]]; then
    out=$(_jobq_run stats --json)
  else
    out=$(_jobq_run cron ls --json)
  fi
  grep -o '"name":"[^"]*"' <<<"$out" | sed 's/^"name":"//; s/"$//'
}

# _jobq_options CMD...: the options of the command, from its --help.
_jobq_options() {
  "${COMP_WORDS[0]}" "$@" --help 2>/dev/null |
    grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+'
}

_jobq_commands() {
  "${COMP_WORDS[0]}" --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p'
}

# _jobq_valued CMD...: the options of the command that take a value
# ("-q --queue" for "-q, --queue QUEUE" in its --help).
_jobq_valued() {
  "${COMP_WORDS[0]}" "$@" --help 2>/dev/null |
    grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]* [A-Z]' | grep -oE -- '-[a-zA-Z]\b|--[a-z-]+'
}

_jobq() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local i w cmd="" sub="" nargs=0 _jobq_db="" valued=" --db --max-payload "
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if [[ $w == --db ]]; then
      _jobq_db=${COMP_WORDS[i + 1]}
    elif [[ $w == --db=* ]]; then
      _jobq_db=${w#--db=}
    fi
    if [[ $valued == *" $w "* ]]; then
      ((i++))
    elif [[ $w == -* ]]; then
      :
    elif [[ -z $cmd ]]; then
      cmd=$w
      valued=" $(_jobq_valued "$cmd" | tr '\n' ' ') "
    elif [[ $cmd == cron && -z $sub ]]; then
      sub=$w
      valued=" $(_jobq_valued cron "$sub" | tr '\n' ' ') "
    else
      ((nargs++))
    fi
  done
  case $prev in
    -q | --queue)
      COMPREPLY=($(compgen -W "$(_jobq_names queues)" -- "$cur"))
      return
      ;;
    -s | --state)
      COMPREPLY=($(compgen -W "ready scheduled running waiting pending done dead cancelled" -- "$cur"))
      return
      ;;
    --tz)
      local dir=${TZDIR:-/usr/share/zoneinfo}
      COMPREPLY=($(cd "$dir" 2>/dev/null && compgen -f -- "$cur" | grep -v '\.'))
      if [[ ${#COMPREPLY[@]} == 1 && -d $dir/${COMPREPLY[0]} ]]; then
        COMPREPLY=("${COMPREPLY[0]}/")
        compopt -o nospace 2>/dev/null
      fi
      return
      ;;
    --log-format)
      COMPREPLY=($(compgen -W "text json" -- "$cur"))
      return
      ;;
    --ndjson | --csv | --plot)
      COMPREPLY=($(compgen -f -- "$cur"))
      return
      ;;
  esac
  # Any other option that takes a value: nothing to offer.
  [[ $valued == *" $prev "* ]] && return
  if [[ -z $cmd ]]; then
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W "--db --json --max-payload --help --version" -- "$cur"))
    else
      COMPREPLY=($(compgen -W "$(_jobq_commands) help" -- "$cur"))
    fi
    return
  fi
  if [[ $cmd == cron && -z $sub ]]; then
    COMPREPLY=($(compgen -W "add ls rm pause resume run" -- "$cur"))
    return
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_jobq_options "$cmd" ${sub:+"$sub"})" -- "$cur"))
    return
  fi
  case $cmd in
    help) ((nargs == 0)) && COMPREPLY=($(compgen -W "$(_jobq_commands)" -- "$cur")) ;;
    pause | resume | purge | limit)
      ((nargs == 0)) && COMPREPLY=($(compgen -W "$(_jobq_names queues)" -- "$cur"))
      ;;
    policy)
      ((nargs == 0)) && COMPREPLY=($(compgen -W "$(_jobq_names queues)" -- "$cur"))
      ((nargs == 1)) && COMPREPLY=($(compgen -W "block skip" -- "$cur"))
      ;;
    cron)
      case $sub in
        rm | pause | resume) COMPREPLY=($(compgen -W "$(_jobq_names schedules)" -- "$cur")) ;;
        add)
          ((nargs == 1)) &&
            COMPREPLY=($(compgen -W "@hourly @daily @weekly @monthly @yearly @every" -- "$cur"))
          ;;
      esac
      ;;
    epoch) ((nargs == 0)) && COMPREPLY=($(compgen -W "bump" -- "$cur")) ;;
    work) ((nargs == 0)) && COMPREPLY=($(compgen -c -- "$cur")) ;;
  esac
}

complete -F _jobq jobq
