"""The MLflow pyfunc wrapper of a saved model directory, logged *from code*.

MLflow records this file's source instead of pickling a Python object, and the
model itself travels as the model directory of :mod:`training.model_files`
(checksummed, skops / XGBoost JSON), so loading a logged model never unpickles
anything. Input: a DataFrame with the model's feature columns; output: a
DataFrame with ``p_true`` (P(true alert)) and ``label``.
"""

from __future__ import annotations

import mlflow
import pandas as pd
from mlflow.pyfunc import PythonModel


class TriageModel(PythonModel):
    def load_context(self, context) -> None:
        from triage.training.model_files import load_model

        self.clf = load_model(context.artifacts["model_dir"])

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        proba = self.clf.predict_proba(model_input)[:, 1]
        labels = self.clf.classes_[(proba >= self.clf.threshold_).astype(int)]
        return pd.DataFrame({"p_true": proba, "label": labels.astype(str)})


mlflow.models.set_model(TriageModel())
