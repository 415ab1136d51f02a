"""The forms of ``derive impl``: each builds its inputs, judges them, diagnoses and reports."""
